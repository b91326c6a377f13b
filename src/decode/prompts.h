/* prompts: the reasoning problem sent to the server (reference §8).
 *
 * From an AIME-style jsonl file (--aime FILE: one JSON object per line with a "problem" or a
 * "prompt" string; blank lines skipped) by 0-based index, or from a small embedded set written
 * for this project, so the benchmark runs without network. The seed's rule, exactly: when the
 * text does not contain "boxed", "\n" and the instruction "Please reason step by step, and put
 * your final answer within \boxed{}." are appended (nothing trimmed), so that prompts, TTFT and
 * output_sha1 match the seed's on the same model. */
#ifndef FT_DECODE_PROMPTS_H
#define FT_DECODE_PROMPTS_H
#include <stddef.h>

#define FTPROMPT_INSTRUCTION "Please reason step by step, and put your final answer within \\boxed{}."
#define FTPROMPT_MAX_FILE (64u << 20)

/* Number of embedded problems. */
int ftprompt_builtin_count(void);
/* Embedded problem i (borrowed) and its answer (borrowed), NULL when out of range. */
const char *ftprompt_builtin(int i, const char **answer);

/* The prompt for problem index from path (NULL: the embedded set) as a new string with the
 * instruction rule applied (caller frees *out). source (size n) names where it came from
 * ("builtin:3", "aime25.jsonl:3"). Errors: -ERANGE (index past the end; err says how many
 * there are), -EBADMSG (line index not JSON or without problem/prompt), -errno reading. */
int ftprompt_load(const char *path, int index, char **out, char *source, size_t n, char *err, size_t errlen);

/* text with the instruction rule applied, as a new string (NULL on allocation failure). */
char *ftprompt_with_instruction(const char *text);
#endif
