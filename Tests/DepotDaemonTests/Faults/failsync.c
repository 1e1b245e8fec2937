// A fault for the tests (issue #35): preloaded into depotd (LD_PRELOAD), it
// makes fsync and fdatasync fail with EIO (or, with DEPOT_FAIL_SYNC_MODE=write,
// write, pwrite and pwrite64 fail with ENOSPC, as on a full disk) on files
// whose path ends in $DEPOT_FAIL_SYNC_SUFFIX (default "-wal", a store's
// write-ahead log) while the file named by $DEPOT_FAIL_SYNC exists. The
// tests create and remove that file to turn the fault on and off, and
// compile this with cc.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int mode_is(const char *mode) {
    const char *m = getenv("DEPOT_FAIL_SYNC_MODE");
    return strcmp(m == NULL ? "sync" : m, mode) == 0;
}

static int should_fail(int fd) {
    const char *trigger = getenv("DEPOT_FAIL_SYNC");
    if (trigger == NULL || access(trigger, F_OK) != 0) return 0;
    const char *suffix = getenv("DEPOT_FAIL_SYNC_SUFFIX");
    if (suffix == NULL) suffix = "-wal";
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0) return 0;
    path[n] = 0;
    size_t l = strlen(suffix);
    return (size_t)n >= l && strcmp(path + n - l, suffix) == 0;
}

int fsync(int fd) {
    static int (*real)(int);
    if (mode_is("sync") && should_fail(fd)) { errno = EIO; return -1; }
    if (real == NULL) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    return real(fd);
}

int fdatasync(int fd) {
    static int (*real)(int);
    if (mode_is("sync") && should_fail(fd)) { errno = EIO; return -1; }
    if (real == NULL) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    return real(fd);
}

ssize_t write(int fd, const void *buf, size_t n) {
    static ssize_t (*real)(int, const void *, size_t);
    if (fd > 2 && mode_is("write") && should_fail(fd)) { errno = ENOSPC; return -1; }
    if (real == NULL) real = (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
    return real(fd, buf, n);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t offset) {
    static ssize_t (*real)(int, const void *, size_t, off_t);
    if (mode_is("write") && should_fail(fd)) { errno = ENOSPC; return -1; }
    if (real == NULL) real = (ssize_t (*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite");
    return real(fd, buf, n, offset);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t offset) {
    static ssize_t (*real)(int, const void *, size_t, off64_t);
    if (mode_is("write") && should_fail(fd)) { errno = ENOSPC; return -1; }
    if (real == NULL) real = (ssize_t (*)(int, const void *, size_t, off64_t))dlsym(RTLD_NEXT, "pwrite64");
    return real(fd, buf, n, offset);
}
