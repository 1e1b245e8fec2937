#ifndef DEPOT_CONSOLE_H
#define DEPOT_CONSOLE_H

/// One file of the console (DESIGN §19), embedded in the binary at build
/// time: its name under /console/, its media type, its bytes.
typedef struct {
    const char *name;
    const char *type;
    const unsigned char *data;
    unsigned long size;
} depot_console_asset;

/// The console's files: `depot_console_asset_count()` of them.
unsigned long depot_console_asset_count(void);
const depot_console_asset *depot_console_asset_at(unsigned long i);

/// `size` bytes gzip-compressed (zlib's deflate, level 9) into a buffer
/// malloc'd at `*out` (the caller frees it); the compressed size, or 0 when
/// zlib fails.
unsigned long depot_console_gzip(const unsigned char *data, unsigned long size, unsigned char **out);

#endif
