/* Logging and decoder error accounting. */
#include "base/base.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void base_log(enum base_log_level level, const char *component, const char *fmt, ...)
{
    static const char tag[] = {'D', 'I', 'W', 'E'};
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* One write(2) per line so that lines from several threads never interleave. */
    char line[1200];
    int n = snprintf(line, sizeof line, "%s[%d] %c %s: %s\n", program_invocation_short_name,
                     (int)getpid(), tag[level & 3], component ? component : "-", msg);
    if (n > (int)sizeof line - 1)
        n = (int)sizeof line - 1;
    if (n > 0 && write(STDERR_FILENO, line, (size_t)n) < 0)
        (void)errno;
}

const char *base_dec_name(enum base_dec code)
{
    static const char *names[BASE_DEC_NKINDS] = {
        [BASE_DEC_OK] = "ok",
        [BASE_DEC_TRUNCATED] = "truncated",
        [BASE_DEC_OVERSIZED] = "oversized",
        [BASE_DEC_BAD_VERSION] = "bad_version",
        [BASE_DEC_BAD_MAGIC] = "bad_magic",
        [BASE_DEC_BAD_TYPE] = "bad_type",
        [BASE_DEC_BAD_VALUE] = "bad_value",
        [BASE_DEC_BAD_JSON] = "bad_json",
        [BASE_DEC_BAD_CHECKSUM] = "bad_checksum",
    };
    if ((unsigned)code >= BASE_DEC_NKINDS)
        return "unknown";
    return names[code];
}

void base_decstats_add(base_decstats_t *st, enum base_dec code)
{
    if ((unsigned)code >= BASE_DEC_NKINDS)
        code = BASE_DEC_BAD_VALUE;
    __atomic_fetch_add(&st->n[code], 1, __ATOMIC_RELAXED);
}

uint64_t base_decstats_errors(const base_decstats_t *st)
{
    uint64_t total = 0;
    for (int i = 1; i < BASE_DEC_NKINDS; i++)
        total += __atomic_load_n(&st->n[i], __ATOMIC_RELAXED);
    return total;
}
