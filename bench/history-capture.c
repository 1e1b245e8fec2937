/* bench/history-floor's onepass-binary kind (issue 32): an SQLite extension
   that captures each record's identifier, old and new value inside the
   UPDATE's own pass. cap(identifier, old, new) appends them to a buffer
   (a length byte, the identifier's bytes, two doubles; identifiers of up
   to 255 bytes, the benchmark's are 36) and returns new;
   flush() returns the buffer as one blob and empties it. A measure of what
   a packed binary history would cost SQLite, not a part of depotd. */
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1
#include <stdlib.h>
#include <string.h>
static unsigned char *buf; static size_t len, cap_;
static void put(const void *p, size_t n) {
  if (len + n > cap_) {
    cap_ = (len + n) * 2;
    buf = realloc(buf, cap_);
    if (!buf) abort();
  }
  memcpy(buf + len, p, n); len += n;
}
static void capf(sqlite3_context *c, int argc, sqlite3_value **v) {
  int n = sqlite3_value_bytes(v[0]);
  const unsigned char *s = sqlite3_value_text(v[0]);
  unsigned char b = (unsigned char)n; put(&b, 1); put(s, n);
  double o = sqlite3_value_double(v[1]), w = sqlite3_value_double(v[2]);
  put(&o, 8); put(&w, 8);
  sqlite3_result_value(c, v[2]);
}
static void flushf(sqlite3_context *c, int argc, sqlite3_value **v) {
  sqlite3_result_blob(c, buf, (int)len, SQLITE_TRANSIENT); len = 0;
}
int sqlite3_historycapture_init(sqlite3 *db, char **err, const sqlite3_api_routines *api) {
  SQLITE_EXTENSION_INIT2(api);
  sqlite3_create_function(db, "cap", 3, SQLITE_UTF8, 0, capf, 0, 0);
  sqlite3_create_function(db, "flush", 0, SQLITE_UTF8, 0, flushf, 0, 0);
  return SQLITE_OK;
}
