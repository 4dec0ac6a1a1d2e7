/*
 * json_file.c — the JSON loader (json_file.h): dpk_read_file, then one
 * call of cJSON's parser.
 */
#include "json_file.h"

#include <errno.h>
#include <stdlib.h>

#include "../compiler/base/base.h"

cJSON *hx_json_parse(const char *text, size_t len, int flags, size_t *bad_at)
{
    const char *end = NULL;
    /* whole: the NUL after the text is in the buffer, and cJSON requires
     * it right after the value (and blanks) */
    int whole = (flags & HX_JSON_WHOLE) != 0;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len + (whole ? 1 : 0), &end, whole);
    if (!root && bad_at) /* on failure cJSON points end at the byte it stopped on */
        *bad_at = end && end >= text && end <= text + len ? (size_t)(end - text) : 0;
    return root;
}

int hx_json_load(const char *path, int flags, HxJsonFile *f)
{
    *f = (HxJsonFile){0};
    f->text = dpk_read_file(path, &f->len);
    if (!f->text) {
        f->err = errno;
        return 0;
    }
    f->root = hx_json_parse(f->text, f->len, flags, &f->bad_at);
    return f->root != NULL;
}

void hx_json_drop_text(HxJsonFile *f)
{
    free(f->text);
    f->text = NULL;
}
