#include "depot_sqlite.h"
#include <sqlite3.h>

static int memstatus_result = -1;

/* Runs when the program loads, before any thread can touch SQLite:
   sqlite3_config is only safe while SQLite is not initialised and no other
   thread is initialising it, which a lazy call from Swift cannot promise. */
__attribute__((constructor))
static void depot_sqlite_configure(void) {
    memstatus_result = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

int depot_sqlite_disable_memstatus(void) {
    return memstatus_result;
}

#include <malloc.h>

int depot_set_mmap_threshold(int bytes) {
    return mallopt(M_MMAP_THRESHOLD, bytes);
}

#include <sys/stat.h>

static void depot_fill(const struct stat *st, struct depot_file_status *out) {
    out->device = (long long)st->st_dev;
    out->inode = (long long)st->st_ino;
    out->size = (long long)st->st_size;
    out->modified_ns = (long long)st->st_mtim.tv_sec * 1000000000LL + (long long)st->st_mtim.tv_nsec;
    out->is_regular = S_ISREG(st->st_mode) ? 1 : 0;
    out->is_socket = S_ISSOCK(st->st_mode) ? 1 : 0;
}

int depot_fstat(int fd, struct depot_file_status *out) {
    struct stat st;
    if (fstat(fd, &st) != 0) return -1;
    depot_fill(&st, out);
    return 0;
}

int depot_stat(const char *path, struct depot_file_status *out) {
    struct stat st;
    if (stat(path, &st) != 0) return -1;
    depot_fill(&st, out);
    return 0;
}
