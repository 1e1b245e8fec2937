// The console's files, embedded at build time with C23's #embed (clang 19
// and later, which the Swift toolchain carries): the build records them as
// inputs, so an edit of a file rebuilds this one. Written by hand because
// SwiftPM's own embedInCode makes a Swift array literal of every byte,
// which the type checker takes minutes over.
#pragma clang diagnostic ignored "-Wc23-extensions"

#include "depot_console.h"

#include <stdlib.h>
#include <zlib.h>

static const unsigned char index_html[] = {
#embed "console/index.html"
};
static const unsigned char app_js[] = {
#embed "console/app.js"
};
static const unsigned char app_css[] = {
#embed "console/app.css"
};
static const unsigned char icon_svg[] = {
#embed "console/icon.svg"
};

static const depot_console_asset assets[] = {
    {"index.html", "text/html; charset=utf-8", index_html, sizeof index_html},
    {"app.js", "text/javascript; charset=utf-8", app_js, sizeof app_js},
    {"app.css", "text/css; charset=utf-8", app_css, sizeof app_css},
    {"icon.svg", "image/svg+xml", icon_svg, sizeof icon_svg},
};
unsigned long depot_console_asset_count(void) { return sizeof assets / sizeof assets[0]; }

const depot_console_asset *depot_console_asset_at(unsigned long i) { return &assets[i]; }

unsigned long depot_console_gzip(const unsigned char *data, unsigned long size, unsigned char **out) {
    z_stream z = {0};
    // 15 + 16: a gzip wrapper, as Content-Encoding: gzip wants.
    if (deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) != Z_OK) return 0;
    size_t bound = deflateBound(&z, size) + 32;
    unsigned char *buffer = malloc(bound);
    if (buffer == NULL) {
        deflateEnd(&z);
        return 0;
    }
    z.next_in = (unsigned char *)data;
    z.avail_in = (uInt)size;
    z.next_out = buffer;
    z.avail_out = (uInt)bound;
    int status = deflate(&z, Z_FINISH);
    size_t written = z.total_out;
    deflateEnd(&z);
    if (status != Z_STREAM_END) {
        free(buffer);
        return 0;
    }
    *out = buffer;
    return written;
}
