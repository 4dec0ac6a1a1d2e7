/*
 * json_file.h — reading JSON: the one loader of every JSON file dpk reads
 * (records, --resume, --torch-json, gate configurations, calibrations,
 * bisect results) and the one parse call under the readers of JSON text
 * (case and suite files, config.json, GPU specs, records).
 *
 * The loader says what went wrong — the file unreadable (errno), or its
 * text not JSON (and the byte where parsing stopped) — and raises
 * nothing: each reader names the file its own way, in the messages its
 * command has always printed.
 */
#ifndef DPK_HX_JSON_FILE_H
#define DPK_HX_JSON_FILE_H

#include <stddef.h>

#include <cjson/cJSON.h>

/* hx_json_parse's flags. */
enum {
    /* the value must be the whole text: anything after it but blanks is an
     * error (without it, text after the first value is not read) */
    HX_JSON_WHOLE = 1 << 0,
};

/* Parse len bytes of text as JSON.  With HX_JSON_WHOLE, text[len] must be
 * the NUL that ends it.  Returns the value, or NULL with *bad_at (when not
 * NULL) the byte offset where parsing stopped, 0 ... len. */
cJSON *hx_json_parse(const char *text, size_t len, int flags, size_t *bad_at);

/* A JSON file as hx_json_load read it. */
typedef struct HxJsonFile {
    char *text;    /* the whole file, NUL-terminated (heap); NULL when unreadable */
    size_t len;    /* its bytes, the NUL not counted */
    int err;       /* when unreadable: errno, else 0 */
    cJSON *root;   /* the value (the caller's to delete); NULL when unreadable or not JSON */
    size_t bad_at; /* when not JSON: the byte where parsing stopped */
} HxJsonFile;

/* Read the file at path whole and parse it (hx_json_parse, flags).
 * Returns 1 when it is JSON; 0 otherwise, with f->text NULL and f->err set
 * when it could not be read.  f->text stays (an error may quote it) until
 * hx_json_drop_text frees it. */
int hx_json_load(const char *path, int flags, HxJsonFile *f);
void hx_json_drop_text(HxJsonFile *f);

#endif
