"""The status page with many GPUs, laid out by headless Chromium: 8 fake GPUs' profiles
(one with a lost memory channel, one whose nvfp4 verdict differs, validation blocks, an H200's
replay blocks and a sweep with skewed points, five profiles of history each) in the store of a
real ftbenchd; GET / is saved with a small measuring script appended and loaded in Chromium
(--dump-dom), which reports the page's height with every GPU's detail folded, and, with all of
them unfolded, every pair of SVG text labels whose boxes overlap and every label outside its SVG.
Checks: one comparison table per format with all 8 GPUs side by side, the degraded GPU's figures
marked, the odd verdict marked, the validation shown; details folded; history plots with a
zero-based axis, unit and dates; the replay maps (one per format and skew, the default workload
outlined); no overlapping label; the folded page's height bounded. Screenshots in
$BUILD/test-artifacts/ (status-page-8gpu.png, status-page-8gpu-open.png).
Run through tests/integration/page.sh."""
import copy
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # ftd_harness
from ftd_harness import BUILD, ROOT, Daemon, Scratch, ensure, finish, plan, run_tests  # noqa: E402

ARTIFACTS = os.path.join(BUILD, "test-artifacts")
N = 8
DEGRADED, ODD, SLOW_GATHER, HOSTILE = 5, 3, 6, 7
HOSTILE_NAME = "H200 <SXM> & 'x' \"y\" </details><script>"
MAX_FOLDED_HEIGHT = 2600  # px at 1280 px wide: the comparison, the jobs, 8 folded details

MEASURE = """<script>
window.addEventListener('load', function () {
  var res = {folded: document.documentElement.scrollHeight};
  document.querySelectorAll('details').forEach(function (d) { d.open = true; });
  res.unfolded = document.documentElement.scrollHeight;
  res.overlaps = []; res.outside = []; res.svgs = 0; res.labels = 0;
  document.querySelectorAll('svg').forEach(function (svg) {
    res.svgs++;
    var sb = svg.getBoundingClientRect();
    var ts = [].slice.call(svg.querySelectorAll('text')).map(function (t) {
      return {t: t.textContent, r: t.getBoundingClientRect()};
    }).filter(function (x) { return x.r.width > 0; });
    res.labels += ts.length;
    var name = svg.getAttribute('class') + ' ' + (svg.querySelector('title') || {}).textContent;
    ts.forEach(function (a, i) {
      if (a.r.left < sb.left - 1 || a.r.right > sb.right + 1 || a.r.top < sb.top - 1 || a.r.bottom > sb.bottom + 1)
        res.outside.push([name, a.t]);
      for (var j = i + 1; j < ts.length; j++) {
        var b = ts[j];
        var w = Math.min(a.r.right, b.r.right) - Math.max(a.r.left, b.r.left);
        var h = Math.min(a.r.bottom, b.r.bottom) - Math.max(a.r.top, b.r.top);
        if (w > 1 && h > 1) res.overlaps.push([name, a.t, b.t]);
      }
    });
  });
  var pre = document.createElement('pre');
  pre.id = 'layout';
  pre.textContent = JSON.stringify(res);
  document.body.appendChild(pre);
});
</script>"""


def uuid(i):
    return f"GPU-{i:08d}-aaaa-bbbb-cccc-{i:012d}"


def fixture(name):
    with open(os.path.join(ROOT, "tests", "fixtures", "profiles", name)) as f:
        return json.load(f)


VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
COLOR = re.compile(r"#[0-9a-fA-F]{3}|#[0-9a-fA-F]{6}|none|currentColor|[a-z]+")


def well_formed(page):
    """Every element closed, in order (void ones excepted): the reasons it is not, [] when it is."""
    from html.parser import HTMLParser

    class P(HTMLParser):
        def __init__(self):
            super().__init__(convert_charrefs=True)
            self.stack, self.bad = [], []

        def handle_starttag(self, tag, attrs):
            if tag not in VOID:
                self.stack.append(tag)

        def handle_endtag(self, tag):
            if not self.stack or self.stack[-1] != tag:
                self.bad.append(f"</{tag}> closes {self.stack[-1] if self.stack else 'nothing'} at {self.getpos()}")
                if tag in self.stack:
                    while self.stack.pop() != tag:
                        pass
            else:
                self.stack.pop()

    p = P()
    p.feed(page)
    p.close()
    return p.bad + ([f"never closed: {p.stack}"] if p.stack else [])


def svg_geometry(page):
    """What is wrong with the drawings' geometry: colours that are none, numbers that are not,
    positions outside their svg, legend swatches on each other, date labels off the bottom."""
    bad = []
    for m in re.finditer(r'<svg ([^>]*)>(.*?)</svg>', page, re.S):
        head, body = m.group(1), m.group(2)
        w, h = (re.search(rf'{k}="([0-9.]+)"', head) for k in ("width", "height"))
        if not w or not h:
            continue
        W, H = float(w.group(1)), float(h.group(1))
        cls = (re.search(r'class="([^"]*)"', head) or re.search(r'id="([^"]*)"', head)).group(1)
        for el in re.finditer(r"<(\w+)((?:\s+[\w-]+=\"[^\"]*\")*)\s*/?>", body):
            attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', el.group(2)))
            for k in ("fill", "stroke"):
                if k in attrs and not COLOR.fullmatch(attrs[k]):
                    bad.append(f"{cls}: <{el.group(1)} {k}=\"{attrs[k]}\">")
            for k in ("x", "y", "x1", "x2", "y1", "y2", "cx", "cy", "r", "width", "height"):
                if k in attrs:
                    try:
                        v = float(attrs[k])
                    except ValueError:
                        bad.append(f"{cls}: <{el.group(1)} {k}=\"{attrs[k]}\"> is no number")
                        continue
                    lim = W if k[0] in "xcw" and k != "cy" else H
                    if k in ("x", "y", "x1", "x2", "y1", "y2", "cx", "cy") and not -0.5 <= v <= lim + 0.5:
                        bad.append(f"{cls} ({W:g} x {H:g}): <{el.group(1)} {k}=\"{v:g}\"> outside")
        swatches = [(float(a), float(b)) for a, b in re.findall(r'<rect x="([0-9.]+)" y="([0-9.]+)" width="9" height="9"', body)]
        for i, (x0, y0) in enumerate(swatches):
            for x1, y1 in swatches[i + 1:]:
                if abs(x0 - x1) < 9 and abs(y0 - y1) < 9:
                    bad.append(f"{cls}: legend swatches at ({x0:g}, {y0:g}) and ({x1:g}, {y1:g}) overlap")
        if "history-plot" in cls:
            for y in re.findall(r'<text class="xtick" x="[0-9.]+" y="([-0-9.]+)"', body):
                if float(y) < H - 12:
                    bad.append(f"{cls}: a date label at y {y}, not at the bottom ({H:g})")
    return bad


def profiles():
    base = fixture("validated.json")
    # replay blocks as src/replay/ writes them: an H200's (ftbench bw --replay, bf16 and nvfp4,
    # one point each, cache fraction 0.39999999999999997) and a sweep with skewed points at the
    # cache sizes and reuse of skew-0 ones (tests/fixtures/profiles/replay.json)
    real = {0: fixture("h200_replay.json")["replay"], 1: fixture("replay.json")["replay"]}
    out = {}
    for i in range(N):
        p = copy.deepcopy(base)
        p["gpu"]["uuid"] = uuid(i)
        p["gpu"]["index"] = i
        p["gpu"]["pci_bus_id"] = f"00000000:{0x18 + 0x11 * i:02x}:00.0"
        if i in real:
            p["replay"] = real[i]
        else:
            p.pop("replay", None)  # the replay map where a profile has one
        if i == DEGRADED:
            for k in p["dtype_kernels"].values():
                if k.get("cpu_moe_gbs"):
                    k["cpu_moe_gbs"] *= 0.66
                    k["cpu_moe_gbs_spread"] = None
            p["ceilings"]["cpu_stream_read_gbs"] *= 0.66
        if i == SLOW_GATHER:  # its bf16 gather only, half the others'
            p["dtype_kernels"]["bf16"]["pcie_gather_gbs"] *= 0.5
            p["dtype_kernels"]["bf16"]["pcie_gather_gbs_spread"] = None
        if i == HOSTILE:  # a name with every character HTML gives a meaning
            p["gpu"]["name"] = HOSTILE_NAME
        if i == ODD:
            p["dtypes"]["nvfp4"] = "hybrid"
        if i == 0:  # judged by the verdict for the run's workload (profile validate's verdict_point)
            p["validation"]["bf16"].update(verdict="hybrid", verdict_point={"cache_fraction": 0.4, "reuse": 0.0})
        out[uuid(i)] = p
    return out


def history(p, k):
    """The k-th of 5 kept profiles: 30 days apart in all, the figures moving a little."""
    q = copy.deepcopy(p)
    q["epoch"] = p["epoch"] - (4 - k) * 7.5 * 86400
    f = 1 + 0.03 * ((k * 7) % 5 - 2) / 2
    for e in q["dtype_kernels"].values():
        for key in ("cpu_moe_gbs", "pcie_gather_gbs"):
            if e.get(key):
                e[key] *= f
    q["ceilings"]["cpu_stream_read_gbs"] *= f
    return q


def chromium():
    for c in ("chromium", "chromium-browser"):
        p = shutil.which(c)
        if p:
            return p
    raise RuntimeError("chromium is not installed (scripts/deps.sh installs Debian's chromium)")


def browse(url, *flags):
    udd = tempfile.mkdtemp(prefix="ftb-chromium-")
    try:
        r = subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                            f"--user-data-dir={udd}", "--window-size=1280,1000", *flags, url],
                           capture_output=True, timeout=120)
        return r.stdout.decode(errors="replace")
    finally:
        shutil.rmtree(udd, ignore_errors=True)


def test_page_8_gpus(t):
    d = Daemon(t.tmp, "page")
    for u, p in profiles().items():
        hd = os.path.join(d.prof, "history", u)
        os.makedirs(hd)
        for k in range(5):
            q = history(p, k)
            with open(os.path.join(hd, "%013d.json" % round(q["epoch"] * 1000)), "w") as f:
                json.dump(q, f)
        with open(os.path.join(d.prof, u + ".json"), "w") as f:
            json.dump(p, f)
    d.start()
    try:
        st, _, raw = d.req("GET", "/")
        ensure(st == 200, f"GET /: {st}")
    finally:
        d.stop()
    page = raw.decode()
    # a name is text: every special character escaped, as it was read back by an HTML parser
    summ = re.search(r'<details class="profile" data-uuid="%s"><summary><b>(.*?)</b>' % re.escape(uuid(HOSTILE)), page, re.S)
    ensure(summ and summ.group(1) == "H200 &lt;SXM&gt; &amp; &#39;x&#39; &quot;y&quot; &lt;/details&gt;&lt;script&gt;",
           f"the hostile name on the page: {summ and summ.group(1)}")
    import html as _html
    ensure(_html.unescape(summ.group(1)) == HOSTILE_NAME, "the name read back")
    # the GPUs' links as the inventory has them (the fake worker's: the second trained at Gen4 of 5)
    gl = dict(re.findall(r'<tr class="gpu" data-uuid="([^"]+)">(.*?)</tr>', page, re.S))
    ensure(len(gl) == 2 and "Gen5 x16 / Gen5 x16</td>" in gl["GPU-11111111-aaaa-bbbb-cccc-000000000000"]
           and 'Gen4 x16 / Gen5 x16 <span class="warn">(below max)</span>' in gl["GPU-22222222-aaaa-bbbb-cccc-000000000000"],
           f"the GPUs' links: {gl}")
    # the comparison: one table per format, each with the 8 GPUs
    tables = re.findall(r'<table class="cmp" data-format="([^"]+)">(.*?)</table>', page, re.S)
    ensure(len(tables) == 5, f"one comparison table per format: {[f for f, _ in tables]}")
    for fmt, body in tables:
        ensure(body.count("<tr data-uuid=") == N, f"{fmt}: all {N} GPUs side by side")
    bf16 = dict(tables)["bf16"]
    rows = dict(re.findall(r'<tr data-uuid="([^"]+)">(.*?)</tr>', bf16, re.S))
    cells = {u: re.findall(r'<td class="([^"]*)"', r) for u, r in rows.items()}
    marked = sorted((u, i) for u, c in cells.items() for i, k in enumerate(c) if k == "num outlier")
    want = sorted([(uuid(DEGRADED), 1), (uuid(SLOW_GATHER), 2)])  # cells: verdict, CPU MoE, gather
    ensure(marked == want,
           f"the degraded GPU's CPU MoE and the slow gather marked, only they: {marked}, cells {cells[uuid(0)]}")
    nv = dict(re.findall(r'<tr data-uuid="([^"]+)">(.*?)</tr>', dict(tables)["nvfp4"], re.S))
    ensure('class="verdict odd"' in nv[uuid(ODD)] and sum('odd' in r for r in nv.values()) == 1,
           "the one differing nvfp4 verdict is marked")
    ensure("&#10003;" in rows[uuid(0)] and 'class="val warn"' in nv[uuid(0)], "validation agrees/disagrees shown")
    ensure(re.search(r'title="[^"]*: agrees with hybrid at cache 0\.40, reuse 0\.00"', rows[uuid(0)])
           and "at cache" not in rows[uuid(1)], "a validation judged by a workload's verdict says which")
    # details folded, each with its plots
    ensure(page.count('<details class="profile"') == N and "<details class=\"profile\" data-uuid" in page
           and " open>" not in page, "each GPU's detail folded")
    ensure(page.count('class="history-plot"') == N * 6, "history: ceilings + 5 formats per GPU")
    hp = re.search(r'<svg class="history-plot".*?</svg>', page, re.S).group(0)
    ensure(", GB/s from 0</text>" in hp and re.search(r'class="ytick"[^>]*>0</text>', hp), "zero-based axis, its unit")
    ensure(len(re.findall(r'class="xtick"[^>]*>\d{4}-\d\d-\d\d</text>', hp)) == 2, "first and last dates")
    # each history plot's axis reaches its largest point, at a round number not far above it
    for body in re.findall(r'<svg class="history-plot".*?</svg>', page, re.S):
        top = max(float(v) for v in re.findall(r'class="ytick"[^>]*>([-.e0-9]+)</text>', body))
        pts = [float(v) for v in re.findall(r': ([.0-9]+) GB/s</title>', body)]
        ensure(pts and max(pts) <= top < 5 * max(pts) and top / 10 ** math.floor(math.log10(top)) in (1, 2, 5),
               f"a history plot's axis top {top} for points up to {max(pts) if pts else None}")
    # the replay maps: GPU 0's two formats; GPU 1's bf16 once per skew, each point in its own map
    maps = re.findall(r'<svg class="replay-map" data-format="([^"]+)" data-skew="([^"]+)".*?</svg>', page, re.S)
    ensure(len(maps) == 4, f"the replay maps of GPUs 0 and 1: {maps}")
    ensure(page.count('<rect class="cell') == 10, "one cell per replay point")
    ensure(page.count('<rect class="cell default"') == 3, "the default workload outlined, 0.39999999999999997 = 0.4")
    sk = re.findall(r'<svg class="replay-map" data-format="bf16" data-skew="([^"]+)".*?</svg>', page, re.S)
    ensure(sorted(sk) == ["0", "0", "1.2"], f"bf16's maps by skew: {sk}")
    skewed = re.search(r'<svg class="replay-map" data-format="bf16" data-skew="1.2".*?</svg>', page, re.S).group(0)
    ensure(", skew 1.2: winner" in skewed and skewed.count('<rect class="cell') == 2
           and 'data-winner="offload"' in skewed, "the skewed points in their own map")
    # the page is well formed, its drawings' attributes are colours and numbers inside their svg
    wf = well_formed(page)
    ensure(not wf, f"the page is not well formed: {wf[:5]}")
    geo = svg_geometry(page)
    ensure(not geo, f"the drawings: {geo[:8]}")
    # each cell's tooltip names its point as the profile has it: cache fraction, reuse, winner
    # and the best fetch fraction (the oracle: the replay points fed to GPUs 0 and 1)
    want = sorted((round(q["cache_fraction"], 6), round(q["reuse"], 6), q["winner"],
                   round(q["best_fetch_fraction"], 2) if isinstance(q.get("best_fetch_fraction"), (int, float)) else None)
                  for i in (0, 1) for blk in profiles()[uuid(i)]["replay"].values() for q in blk["points"]
                  if isinstance(q.get("winner"), str))
    got = []
    for win, title in re.findall(r'<rect class="cell[^"]*" data-winner="([^"]*)"[^>]*><title>(.*?)</title>', page):
        m = re.fullmatch(r"cache ([-+.e0-9]+), reuse ([-+.e0-9]+): (\w+)(?:, best fetch fraction ([.0-9]+))?"
                         r"(?:, the default workload)?", title)
        ensure(m and m.group(3) == win, f"a cell's tooltip {title!r} (winner {win})")
        got.append((round(float(m.group(1)), 6), round(float(m.group(2)), 6), m.group(3),
                    float(m.group(4)) if m.group(4) else None))
    ensure(sorted(got) == want, f"the cells' tooltips {sorted(got)}, the profiles' points {want}")
    # layout in Chromium
    tmp = os.path.join(t.tmp, "page")
    html = os.path.join(tmp, "page.html")
    with open(html, "w") as f:
        f.write(page.replace("</body>", MEASURE + "</body>"))
    dom = browse("file://" + html, "--virtual-time-budget=3000", "--dump-dom")
    m = re.search(r'<pre id="layout">(.*?)</pre>', dom, re.S)
    ensure(m, f"no layout report from Chromium: {dom[:300]}")
    lay = json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"))
    ensure(lay["svgs"] >= N * 7 and lay["labels"] > 500, f"plots drawn: {lay['svgs']} svgs, {lay['labels']} labels")
    ensure(lay["overlaps"] == [], f"overlapping labels: {lay['overlaps'][:10]}")
    ensure(lay["outside"] == [], f"labels outside their plot: {lay['outside'][:10]}")
    ensure(lay["folded"] <= MAX_FOLDED_HEIGHT, f"page height with details folded: {lay['folded']} px")
    os.makedirs(ARTIFACTS, exist_ok=True)
    shot = os.path.join(ARTIFACTS, "status-page-8gpu.png")
    with open(os.path.join(tmp, "plain.html"), "w") as f:  # as served: details folded
        f.write(page)
    browse("file://" + os.path.join(tmp, "plain.html"), "--virtual-time-budget=2000", "--hide-scrollbars",
           f"--window-size=1280,{lay['folded']}", f"--screenshot={shot}")
    with open(os.path.join(tmp, "open.html"), "w") as f:
        f.write(page.replace('<details class="profile"', '<details open class="profile"', 1))
    shot2 = os.path.join(ARTIFACTS, "status-page-8gpu-open.png")
    browse("file://" + os.path.join(tmp, "open.html"), "--virtual-time-budget=2000", "--hide-scrollbars",
           "--window-size=1280,3200", f"--screenshot={shot2}")
    ensure(os.path.getsize(shot) > 20000, "screenshot")
    return f"folded {lay['folded']} px, unfolded {lay['unfolded']} px, {lay['labels']} labels; {shot}"


TESTS = [test_page_8_gpus]


def main():
    plan(len(TESTS))
    t = Scratch("ftbenchd-page-")
    os.makedirs(os.path.join(t.tmp, "page"))
    failed = 0
    try:
        failed += run_tests(TESTS, t)
    finally:
        failed = finish(t.tmp, failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
