# ftbenchd — one non-recursive build.
#
#   make            everything under build/ (binaries, libftprofile, tests)
#   make test       unit + integration tests (no GPU needed); ends with "N passed, N failed"
#   make test-gpu   GPU tests (device machine only)
#   make run        build, then run the main job through the daemon (scripts/make-run.sh)
#   make install    PREFIX=/usr/local DESTDIR=
#   make bench      reproducible benchmarks (bench/*.sh; bench/README.md)
#   make bench-tools  the C tools of bench/ under build/bench/ (make test builds them too)
#   make test-san   the same tests built with ASan+UBSan (CUDA=0)
#   make test-mutants  deliberate breaks, one at a time on a copy of the tree: each must fail its tests
#   make test-mutants-gen  generated mutants (universalmutator), a fixed-seed sample, GEN_BUDGET=S slices
#   make test-soak  the daemon's reliability suite with 50 kill -9 cycles, then 10 minutes of mixed load on
#                   the connection front (by hand; figures in bench/RESULTS.md)
#   make test-peers ftbench decode against a real llama-server (built from the llama-cpp-python sdist
#                   under build/peers, cached; not in CI: the first build takes long on 2 cores)
#
# Knobs: CUDA=0|1 (default: 1 when nvcc is found), SMS="80 90", V=1 (show commands),
#        WERROR=1 (default in CI), BUILD=build, SAN=address,undefined (sanitized build).

VERSION    := 0.1.0
BUILD      ?= build
PREFIX     ?= /usr/local
DESTDIR    ?=
CUDA_HOME  ?= /usr/local/cuda
NVCC       ?= $(CUDA_HOME)/bin/nvcc
SMS        ?= 80 90
CUDA       ?= $(shell test -x $(NVCC) && echo 1 || echo 0)
SAN        ?=
ifeq ($(CI),true)
WERROR     ?= 1
endif
WERROR     ?= 0

ifeq ($(V),1)
Q :=
say :=
else
Q := @
say = @printf '  %-6s %s\n' $(1) $(2);
endif

CC        ?= cc
OPT       ?= -O2 -g
WARN      := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wpointer-arith \
             -Wno-unused-parameter -Wno-missing-field-initializers
ifeq ($(WERROR),1)
WARN      += -Werror
endif
DEPFLAGS   = -MMD -MP
CPPFLAGS  += -D_GNU_SOURCE -DFT_VERSION='"$(VERSION)"' -Isrc -Isrc/profile -Ikernels
CFLAGS    += -std=gnu17 $(OPT) $(WARN) -fPIC -pthread
LDFLAGS   += -pthread
LIBS      := -ljansson -lcurl -lm
ifneq ($(SAN),)
CFLAGS    += -fsanitize=$(SAN) -fno-omit-frame-pointer
LDFLAGS   += -fsanitize=$(SAN)
endif

ifeq ($(CUDA),1)
CPPFLAGS  += -DFT_HAVE_CUDA=1 -I$(CUDA_HOME)/include
CUDA_LIBS := -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt -lstdc++
NVFLAGS   := -std=c++17 -O3 -lineinfo -Xcompiler -fPIC,-Wall -Isrc -Ikernels \
             $(foreach s,$(SMS),-gencode arch=compute_$(s),code=sm_$(s)) \
             -gencode arch=compute_$(lastword $(SMS)),code=compute_$(lastword $(SMS))
CU_SRCS   := $(wildcard kernels/*.cu)
# the GPU expert GEMV (kernels/expert_gemv.cu): the replay's step runner uses it when it is there
ifneq ($(wildcard kernels/expert_gemv.cu),)
CPPFLAGS  += -DFT_HAVE_GEMV=1
endif
else
CUDA_LIBS :=
CU_SRCS   :=
endif

# Per-ISA translation units of the CPU MoE executor: name the file *_avx2.c, *_avx512.c, ...
ISA_avx2       := -mavx2 -mfma -mf16c
ISA_avx512     := -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma -mf16c -mavx2
ISA_avx512bf16 := $(ISA_avx512) -mavx512bf16
ISA_avx512vnni := $(ISA_avx512) -mavx512vnni
ISA_amx        := $(ISA_avx512) -mavx512bf16 -mamx-tile -mamx-bf16 -mamx-int8

# ---------------------------------------------------------------- sources
LIB_SRCS     := $(sort $(wildcard src/util/*.c src/hw/*.c src/moe/*.c src/moe/*/*.c src/replay/*.c \
                  src/bench/*.c src/decode/*.c src/profile/*.c))
PROFILE_SRCS := $(sort $(wildcard src/profile/*.c)) src/util/fsutil.c src/hw/pci.c
CLI_SRCS     := $(sort $(wildcard src/cli/*.c))
DAEMON_SRCS  := $(sort $(wildcard daemon/*.c))
UNIT_SRCS    := $(sort $(wildcard tests/unit/test_*.c))
INTEG_SRCS   := $(sort $(wildcard tests/integration/test_*.c))
GPU_SRCS     := $(sort $(wildcard tests/gpu/test_*.c))
FIXTURE_SRCS := $(sort $(wildcard tests/fixtures/*.c))

obj = $(patsubst %,$(BUILD)/obj/%.o,$(basename $(1)))

LIB_OBJS     := $(call obj,$(LIB_SRCS))
CU_OBJS      := $(call obj,$(CU_SRCS))
PROFILE_OBJS := $(call obj,$(PROFILE_SRCS))
CLI_OBJS     := $(call obj,$(CLI_SRCS))
# The daemon: main.c over libftbenchd.a (every other module of daemon/), which the tests link.
DAEMON_MAIN  := $(call obj,daemon/main.c)
DAEMON_OBJS  := $(call obj,$(filter-out daemon/main.c,$(DAEMON_SRCS)))

# GET /openapi.json: api/openapi.yaml as JSON, compiled into the daemon.
OPENAPI_C    := $(BUILD)/gen/openapi_json.c
DAEMON_OBJS  += $(call obj,$(OPENAPI_C))
# The job arguments' bounds, choices and most items: the worker's flag rows (`ftbench flags`),
# compiled into the daemon (daemon/jobflags.h).
JOBFLAGS_C   := $(BUILD)/gen/job_flags.c
DAEMON_OBJS  += $(call obj,$(JOBFLAGS_C))

LIBFTBENCH   := $(BUILD)/lib/libftbench.a
LIBFTBENCHD  := $(BUILD)/lib/libftbenchd.a
FTBENCH      := $(BUILD)/bin/ftbench
FTBENCHD     := $(BUILD)/bin/ftbenchd
PROF_SO      := $(BUILD)/lib/libftprofile.so
PROF_A       := $(BUILD)/lib/libftprofile.a
PROF_H       := $(BUILD)/include/ftprofile.h
PROF_PC      := $(BUILD)/lib/pkgconfig/ftprofile.pc

UNIT_BINS    := $(patsubst tests/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))
INTEG_BINS   := $(patsubst tests/%.c,$(BUILD)/tests/%,$(INTEG_SRCS))
GPU_BINS     := $(patsubst tests/%.c,$(BUILD)/tests/%,$(GPU_SRCS))
FIXTURE_BINS := $(patsubst tests/%.c,$(BUILD)/tests/%,$(FIXTURE_SRCS))

# ftbench with a fault injected through the bw operations (tests/integration/bw_fault_ops.c)
BWFAULT      := $(BUILD)/tests/integration/ftbench_bwfault

# Test hooks and doubles (FTLOAD_TEST_EINVAL, FTBENCH_LW_FAULT, FTBENCH_TEST_FAKE_GPUS) exist only
# in objects compiled from the same sources with -DFT_TEST_HOOKS, linked ahead of the library into
# test programs, with the doubles of tests/lib/ (TEST_LIB_HOOK_SRCS): ftbench_hooks (the real
# ftbench with them) and test_loader. The product never has them (no_test_doubles.sh checks).
HOOK_SRCS    := src/moe/directio.c src/bench/load_weights.c src/cli/output.c src/cli/cmd_bw.c \
		src/cli/cmd_cache_copy.c src/cli/replay_run.c
TEST_LIB_HOOK_SRCS := tests/lib/fake_gpus.c tests/lib/fake_replay.c
HOOK_OBJS    := $(patsubst %,$(BUILD)/obj-hooks/%.o,$(basename $(HOOK_SRCS) $(TEST_LIB_HOOK_SRCS)))
# ftbench_hooks: the CLI objects with the hook variants in place of their product ones
HOOK_CLI_OBJS := $(filter-out $(call obj,$(filter src/cli/%,$(HOOK_SRCS))),$(CLI_OBJS))
FTHOOKS      := $(BUILD)/tests/integration/ftbench_hooks

ALL := $(FTBENCH) $(FTBENCHD) $(PROF_SO) $(PROF_A) $(PROF_H) $(PROF_PC)

# bench/*.c: one tool each under build/bench/, linked against libftbench (bench/README.md);
# the ones that need CUDA (BENCH_CUDA_SRCS, linked with bench/*.cu) only when CUDA=1.
# bench/ensure_prof.cu is a whole CUDA program (it includes kernels/slot_cache.cu): two tools,
# ensure_prof (per-phase SM cycles, FTSC_PROF) and ensure_time (the same timings uninstrumented).
BENCH_CUDA_SRCS := bench/gather_variants.c bench/expert_gemv.c
BENCH_CU_MAIN := bench/ensure_prof.cu bench/lazy_load_probe.cu bench/gemv_loads.cu
BENCH_SRCS   := $(filter-out $(BENCH_CUDA_SRCS),$(sort $(wildcard bench/*.c)))
ifeq ($(CUDA),1)
BENCH_SRCS   += $(BENCH_CUDA_SRCS)
BENCH_CU_OBJS := $(call obj,$(filter-out $(BENCH_CU_MAIN),$(sort $(wildcard bench/*.cu))))
endif
BENCH_TOOLS  := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRCS))
ifeq ($(CUDA),1)
BENCH_TOOLS  += $(BUILD)/bench/ensure_prof $(BUILD)/bench/ensure_time $(BUILD)/bench/lazy_load_probe \
                $(BUILD)/bench/gemv_loads
endif

.SECONDARY:
.PHONY: bench-tools man test-peers test-soak test-san test-mutants test-mutants-gen all test test-unit test-integration test-gpu run install uninstall clean deps bench tests
all: $(ALL) tests
tests: $(UNIT_BINS) $(INTEG_BINS) $(GPU_BINS) $(FIXTURE_BINS) $(BWFAULT) $(FTHOOKS)

# ---------------------------------------------------------------- rules
$(BUILD)/obj/%.o: %.c
	$(call say,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(XFLAGS) $(DEPFLAGS) -c $< -o $@

$(BUILD)/obj-hooks/%.o: %.c
	$(call say,CC,$<+hooks)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -DFT_TEST_HOOKS=1 $(DEPFLAGS) -c $< -o $@

$(BUILD)/obj/%.o: %.cu
	$(call say,NVCC,$<)
	@mkdir -p $(@D)
	$(Q)$(NVCC) $(NVFLAGS) -DFT_HAVE_CUDA=1 -MMD -MP -c $< -o $@

$(OPENAPI_C): api/openapi.yaml $(wildcard api/schemas/*.json) scripts/gen-openapi-json.py
	$(call say,GEN,$@)
	@mkdir -p $(@D)
	$(Q)python3 scripts/gen-openapi-json.py api/openapi.yaml >$@.tmp && mv $@.tmp $@

$(JOBFLAGS_C): $(FTBENCH) scripts/gen-job-flags.py
	$(call say,GEN,$@)
	@mkdir -p $(@D)
	$(Q)python3 scripts/gen-job-flags.py $(FTBENCH) >$@.tmp && mv $@.tmp $@

$(BUILD)/obj/%_avx2.o:       XFLAGS = $(ISA_avx2)
$(BUILD)/obj/%_avx512.o:     XFLAGS = $(ISA_avx512)
$(BUILD)/obj/%_avx512bf16.o: XFLAGS = $(ISA_avx512bf16)
$(BUILD)/obj/%_avx512vnni.o: XFLAGS = $(ISA_avx512vnni)
$(BUILD)/obj/%_amx.o:        XFLAGS = $(ISA_amx)
$(BUILD)/obj/%_amx_int8.o:   XFLAGS = $(ISA_amx) -mavx512vnni
$(BUILD)/obj/%_amx_int8_emu.o: XFLAGS = $(ISA_avx512vnni)

$(LIBFTBENCH): $(LIB_OBJS) $(CU_OBJS)
	$(call say,AR,$@)
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

$(FTBENCH): $(CLI_OBJS) $(LIBFTBENCH)
	$(call say,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) -o $@ $(CLI_OBJS) $(LIBFTBENCH) $(LIBS) $(CUDA_LIBS)

$(LIBFTBENCHD): $(DAEMON_OBJS)
	$(call say,AR,$@)
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

# The daemon never initialises CUDA: it links without cudart, so a stray CUDA call fails the link.
$(FTBENCHD): $(DAEMON_MAIN) $(LIBFTBENCHD) $(LIBFTBENCH)
	$(call say,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) -o $@ $(DAEMON_MAIN) $(LIBFTBENCHD) $(LIBFTBENCH) $(LIBS) -lmicrohttpd -lsystemd

$(PROF_SO): $(PROFILE_OBJS) src/profile/ftprofile.map
	$(call say,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) -shared -Wl,-soname,libftprofile.so.0 -Wl,--version-script=src/profile/ftprofile.map \
		-o $@ $(PROFILE_OBJS) -ljansson -lm
	$(Q)ln -sf libftprofile.so $(@D)/libftprofile.so.0

$(PROF_A): $(PROFILE_OBJS)
	$(call say,AR,$@)
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

$(PROF_H): src/profile/ftprofile.h
	@mkdir -p $(@D)
	$(Q)cp $< $@

$(PROF_PC): src/profile/ftprofile.pc.in Makefile
	@mkdir -p $(@D)
	$(Q)sed -e 's|@PREFIX@|$(abspath $(BUILD))|' -e 's|@LIBDIR@|$${prefix}/lib|' \
		-e 's|@INCLUDEDIR@|$${prefix}/include|' -e 's|@VERSION@|$(VERSION)|' $< > $@

# Tests: one binary per file, linked against everything (cmocka for assertions).
# TEST_OBJS: helpers every test program links through TEST_LIBS (tests/lib/tmpdir.[ch]: the scratch
# directory; tests/lib/child.[ch]: child processes), so a test's own link rule needs nothing more
# than TEST_LIBS.
TEST_OBJS = $(BUILD)/obj/tests/lib/tmpdir.o $(BUILD)/obj/tests/lib/child.o
TEST_LIBS = $(TEST_OBJS) $(LIBFTBENCH) $(LIBS) $(CUDA_LIBS) -lcmocka
$(UNIT_BINS) $(INTEG_BINS) $(GPU_BINS) $(FIXTURE_BINS): $(TEST_OBJS)
$(BUILD)/tests/%: $(BUILD)/obj/tests/%.o $(LIBFTBENCH)
	$(call say,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) -o $@ $(filter-out $(TEST_OBJS),$(filter %.o,$^)) $(TEST_LIBS) \
		$(if $(findstring integration,$@),-lmicrohttpd -lsystemd)

# the bw tests' shared fake measurements (tests/unit/bw_fake.[ch]), and bw's summary (src/cli is
# outside libftbench: its printer, the table and the output it writes through)
$(BUILD)/tests/unit/test_bw $(BUILD)/tests/unit/test_bw_host: $(BUILD)/obj/tests/unit/bw_fake.o \
	$(call obj,src/cli/bw_print.c src/cli/table.c src/cli/output.c)

# test_gpu_procs loads a stand-in for the driver's NVML (tests/fixtures/nvml/fake_nvml.c).
FAKE_NVML := $(BUILD)/tests/fixtures/nvml/libnvidia-ml.so.1
$(FAKE_NVML): tests/fixtures/nvml/fake_nvml.c
	$(call say,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -fPIC -shared $(LDFLAGS) -o $@ $<
$(BUILD)/tests/unit/test_gpu_procs: $(FAKE_NVML)
# the replay's cost model (tests/lib/fake_replay.c), a test double: test_replay is built with the hooks
$(BUILD)/obj/tests/unit/test_replay.o: CFLAGS += -DFT_TEST_HOOKS=1
$(BUILD)/tests/unit/test_replay: $(BUILD)/obj-hooks/tests/lib/fake_replay.o

# The daemon's unit tests link its modules from libftbenchd.a.
$(BUILD)/tests/unit/test_ftbenchd_%: $(BUILD)/obj/tests/unit/test_ftbenchd_%.o $(LIBFTBENCHD) $(LIBFTBENCH)
	$(call say,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(LIBFTBENCHD) $(TEST_LIBS) -lmicrohttpd -lsystemd

$(BWFAULT): $(CLI_OBJS) $(BUILD)/obj/tests/integration/bw_fault_ops.o $(LIBFTBENCH)
	$(call say,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) -Wl,--wrap=ftbw_real_ops -o $@ $(CLI_OBJS) $(BUILD)/obj/tests/integration/bw_fault_ops.o \
		$(LIBFTBENCH) $(LIBS) $(CUDA_LIBS)

$(BUILD)/bench/%: $(BUILD)/obj/bench/%.o $(BENCH_CU_OBJS) $(LIBFTBENCH)
	$(call say,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(BENCH_CU_OBJS) $(LIBFTBENCH) $(LIBS) $(CUDA_LIBS)

# bench/mhd_limit_repro.c: the libmicrohttpd 0.9.75 limit deadlock that daemon/front.h works around.
$(BUILD)/bench/mhd_limit_repro: LIBS += -lmicrohttpd -lpthread

# bench/lazy_load_probe.cu: a whole CUDA program too (a first launch beside a spinning kernel).
$(BUILD)/bench/lazy_load_probe: bench/lazy_load_probe.cu
	$(call say,NVCC,$@)
	@mkdir -p $(@D)
	$(Q)$(NVCC) -O2 $(foreach s,$(SMS),-gencode arch=compute_$(s),code=sm_$(s)) $< -o $@ -lpthread

# bench/gemv_loads.cu: a whole CUDA program too (kernels/expert_gemv.cu built with FTGEMV_LOADONLY
# beside load-pattern kernels that use sm_90 bulk copies: sm_90 only), linked with libftbench.
$(BUILD)/bench/gemv_loads: bench/gemv_loads.cu bench/hbm_read.cu $(wildcard kernels/expert_gemv*) $(LIBFTBENCH)
	$(call say,NVCC,$@)
	@mkdir -p $(@D) $(BUILD)/obj/bench
	$(Q)$(NVCC) -std=c++17 -O3 -lineinfo -gencode arch=compute_90,code=sm_90 -DFT_HAVE_CUDA=1 -Isrc -Ikernels -Ibench \
		-c $< -o $(BUILD)/obj/bench/gemv_loads.o
	$(Q)$(CC) $(LDFLAGS) -o $@ $(BUILD)/obj/bench/gemv_loads.o $(LIBFTBENCH) $(LIBS) $(CUDA_LIBS)

$(BUILD)/bench/ensure_prof $(BUILD)/bench/ensure_time: bench/ensure_prof.cu kernels/slot_cache.cu kernels/slot_cache_impl.cuh kernels/slot_cache.h
	$(call say,NVCC,$@)
	@mkdir -p $(@D)
	$(Q)$(NVCC) -std=c++17 -O3 -lineinfo $(foreach s,$(SMS),-gencode arch=compute_$(s),code=sm_$(s)) \
		$(if $(filter %/ensure_prof,$@),-DFTSC_PROF) -Ikernels -Isrc $< -o $@

$(FTHOOKS): $(HOOK_CLI_OBJS) $(HOOK_OBJS) $(LIBFTBENCH)
	$(call say,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) -o $@ $(HOOK_CLI_OBJS) $(HOOK_OBJS) $(LIBFTBENCH) $(LIBS) $(CUDA_LIBS)

# test_cpu_moe_amx runs the executor's amx tier on tiles emulated in C where the CPU has none:
# its own functions stand in for the tier's kernel lookups (a link seam, as ftbench_bwfault's);
# the product links the real ones.
AMX_EMU_WRAP := -Wl,--wrap=ftkern_amx_ready,--wrap=ftkern_amx,--wrap=ftkern_amx_int8
$(BUILD)/tests/unit/test_cpu_moe_amx: $(BUILD)/obj/tests/unit/test_cpu_moe_amx.o $(LIBFTBENCH)
	$(call say,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) $(AMX_EMU_WRAP) -o $@ $< $(TEST_LIBS)

$(BUILD)/tests/unit/test_loader: $(BUILD)/obj/tests/unit/test_loader.o $(BUILD)/obj-hooks/src/moe/directio.o $(LIBFTBENCH)
	$(call say,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(BUILD)/obj-hooks/src/moe/directio.o $(TEST_LIBS)

# ---------------------------------------------------------------- targets
bench-tools: $(BENCH_TOOLS)

deps:
	@scripts/deps.sh

test: deps
	@$(MAKE) --no-print-directory all bench-tools
	@BUILD=$(BUILD) scripts/run-tests.sh $(UNIT_BINS) $(INTEG_BINS) $(wildcard tests/integration/*.sh)

test-unit: $(UNIT_BINS)
	@BUILD=$(BUILD) scripts/run-tests.sh $(UNIT_BINS)

test-integration: all
	@BUILD=$(BUILD) scripts/run-tests.sh $(INTEG_BINS) $(wildcard tests/integration/*.sh)

test-gpu: all
	@BUILD=$(BUILD) scripts/run-tests.sh --gpu $(GPU_BINS)

# Compile tier: everything under ASan+UBSan (CUDA off), warnings as errors, unit + integration tests.
test-san:
	@$(MAKE) --no-print-directory BUILD=build-san SAN=address,undefined CUDA=0 WERROR=1 all
	@BUILD=build-san ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		scripts/run-tests.sh $(patsubst $(BUILD)/%,build-san/%,$(UNIT_BINS) $(INTEG_BINS)) \
		$(wildcard tests/integration/*.sh)

# Each break of tests/mutants.py (a list kept beside the tests) applied alone to a copy of the
# tree, rebuilt and tested with its subset (the unit tests + named integration tests): every one
# must fail. Prints the table of bench/RESULTS.md. About 15 minutes on 2 cores.
test-mutants: deps
	@$(MAKE) --no-print-directory all
	@python3 tests/mutants.py

# Generated mutants (tests/gen_mutants.py: universalmutator, installed into build/mutvenv): each of
# src/profile, daemon, src/bench, src/cli and src/decode walked in a fixed-seed order until its quota
# of mutants is judged (built and run: a syntax-only compile first, then the unit tests that link
# the file, then the file's integration tests). Results accumulate in build/mutants-gen/results.jsonl:
# a run resumes where the last one stopped, so GEN_BUDGET=S (seconds; no new mutant after that)
# cuts it into slices. GEN_ARGS=--report prints the table, --rerun-survivors judges the survivors
# again (scores in bench/RESULTS.md §9; equivalent mutants in tests/gen_mutants_equivalent.txt).
GEN_BUDGET ?= 0
GEN_ARGS ?=
test-mutants-gen: all
	@python3 tests/gen_mutants.py --budget $(GEN_BUDGET) $(GEN_ARGS)

# The reliability suite (jobs_hardening.sh) with 50 kill -9 cycles instead of the 10 of `make test`, then
# tests/integration/front_soak.py: 10 minutes (FT_SOAK_S) of bursts, followers, submit floods,
# slow clients and kill -9 (figures in bench/RESULTS.md §7).
test-soak: all
	@BUILD=$(BUILD) FT_KILL9_CYCLES=50 FT_TEST_TIMEOUT=1800 scripts/run-tests.sh tests/integration/jobs_hardening.sh
	@BUILD=$(BUILD) sh tests/integration/run-python front_soak.py yaml jsonschema

# ftbench decode against llama.cpp's llama-server and a tiny GGUF model (bench/peers/run.sh).
test-peers: all
	@BUILD=$(BUILD) sh bench/peers/run.sh

run: deps
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) scripts/make-run.sh

# The suites of bench/README.md that run on this host as they are (bench/slotcache.sh needs a GPU);
# the A/B driver (bench/ab.py) and the device scripts take arguments.
BENCH_SCRIPTS := bench/bw.sh bench/cpu_moe.sh bench/slotcache.sh bench/load_weights.sh bench/daemon_wrk.sh
bench: all bench-tools
	@for s in $(BENCH_SCRIPTS); do echo "== $$s"; BUILD=$(BUILD) $$s || exit 1; done

# Man pages from the programs' --help (scripts/gen-man.sh): ftbench.1, ftbench-<command>.1, ftbenchd.8.
MANDIR := $(BUILD)/man
man: $(MANDIR)/.stamp
$(MANDIR)/.stamp: $(FTBENCH) $(FTBENCHD) scripts/gen-man.sh
	$(call say,MAN,$(MANDIR))
	$(Q)rm -rf $(MANDIR) && scripts/gen-man.sh $(BUILD)/bin $(MANDIR) $(VERSION) && touch $@

install: $(ALL) man
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include \
		$(DESTDIR)$(PREFIX)/lib/systemd/system $(DESTDIR)$(PREFIX)/lib/sysusers.d \
		$(DESTDIR)$(PREFIX)/lib/tmpfiles.d $(DESTDIR)/etc
	install -m 0755 $(FTBENCH) $(FTBENCHD) $(DESTDIR)$(PREFIX)/bin/
	install -m 0755 $(PROF_SO) $(DESTDIR)$(PREFIX)/lib/libftprofile.so.0
	ln -sf libftprofile.so.0 $(DESTDIR)$(PREFIX)/lib/libftprofile.so
	install -m 0644 $(PROF_A) $(DESTDIR)$(PREFIX)/lib/
	install -m 0644 $(PROF_H) $(DESTDIR)$(PREFIX)/include/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$${prefix}/lib|' -e 's|@INCLUDEDIR@|$${prefix}/include|' \
		-e 's|@VERSION@|$(VERSION)|' src/profile/ftprofile.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/ftprofile.pc
	for f in systemd/*.service systemd/*.socket; do [ -e "$$f" ] || continue; \
		sed 's|@BINDIR@|$(PREFIX)/bin|g' $$f > $(DESTDIR)$(PREFIX)/lib/systemd/system/$$(basename $$f); done
	for f in systemd/*.sysusers; do [ -e "$$f" ] && install -m 0644 $$f $(DESTDIR)$(PREFIX)/lib/sysusers.d/ftbenchd.conf; done; true
	for f in systemd/*.tmpfiles; do [ -e "$$f" ] && install -m 0644 $$f $(DESTDIR)$(PREFIX)/lib/tmpfiles.d/ftbenchd.conf; done; true
	[ -e $(DESTDIR)/etc/ftbenchd.conf ] || install -m 0644 etc/ftbenchd.conf $(DESTDIR)/etc/ftbenchd.conf
	install -d $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man8 \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions $(DESTDIR)$(PREFIX)/share/ftbenchd/schemas
	install -m 0644 $(MANDIR)/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 0644 $(MANDIR)/*.8 $(DESTDIR)$(PREFIX)/share/man/man8/
	install -m 0644 etc/ftbench.bash-completion $(DESTDIR)$(PREFIX)/share/bash-completion/completions/ftbench
	ln -sf ftbench $(DESTDIR)$(PREFIX)/share/bash-completion/completions/ftbenchd
	install -m 0644 api/openapi.yaml $(DESTDIR)$(PREFIX)/share/ftbenchd/
	install -m 0644 api/schemas/*.json $(DESTDIR)$(PREFIX)/share/ftbenchd/schemas/

# libFuzzer targets (clang, ASan+UBSan). fuzz_request: the request JSON, the argument table and
# the UTF-8 of every body the daemon would send (tests/fuzz/fuzz_request.c);
# `make fuzz-request FT_FUZZ_SECONDS=60` runs it on the seed bodies of tests/fuzz/request/.
FUZZ_CC      ?= clang
FUZZ_FLAGS   := -std=gnu17 -D_GNU_SOURCE -DFT_VERSION='"$(VERSION)"' -g -O1 -fsanitize=fuzzer,address,undefined \
                -Isrc -Isrc/profile -Idaemon
FUZZ_REQUEST := tests/fuzz/fuzz_request.c daemon/request.c daemon/kinds.c daemon/config.c src/hw/gpu.c \
                src/util/strutil.c src/util/fsutil.c src/util/jobargs.c src/hw/pci.c src/decode/compare.c \
                src/decode/server.c src/util/proc.c src/util/timeutil.c src/moe/formats.c src/moe/models.c \
                src/replay/verdict.c daemon/kindarg.c daemon/jobflags.c $(JOBFLAGS_C)
$(BUILD)/fuzz/fuzz_request: $(FUZZ_REQUEST) $(wildcard daemon/*.h src/util/*.h src/hw/*.h src/decode/*.h)
	$(call say,FUZZ,$@)
	@mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(FUZZ_FLAGS) $(FUZZ_REQUEST) -ljansson -lm -o $@

.PHONY: fuzz-request
fuzz-request: $(BUILD)/fuzz/fuzz_request
	@mkdir -p $(BUILD)/fuzz/request && cp tests/fuzz/request/* $(BUILD)/fuzz/request/
	$(BUILD)/fuzz/fuzz_request -max_total_time=$${FT_FUZZ_SECONDS:-60} -max_len=4096 -timeout=10 \
		-rss_limit_mb=2048 -dict=tests/fuzz/request.dict -artifact_prefix=$(BUILD)/fuzz/ $(BUILD)/fuzz/request

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD)/obj $(BUILD)/obj-hooks -name '*.d' 2>/dev/null)
