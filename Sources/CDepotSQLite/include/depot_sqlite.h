#ifndef DEPOT_SQLITE_H
#define DEPOT_SQLITE_H

/// SQLite's memory statistics, whose global mutex every allocation takes
/// (SQLITE_CONFIG_MEMSTATUS), are turned off by a constructor that runs when
/// the program loads, before SQLite initialises. This returns what that
/// sqlite3_config call returned: SQLITE_OK, or SQLITE_MISUSE when it came too
/// late. A C shim because sqlite3_config is variadic, which Swift cannot call.
int depot_sqlite_disable_memstatus(void);

/// What Depot reads of a file's status, in plain integers. A shim because
/// Swift sees `struct stat` as a member of whichever system module happened
/// to load <sys/stat.h> first, which differs between fresh builds and then
/// fails MemberImportVisibility at random.
struct depot_file_status {
    long long device;
    long long inode;
    long long size;
    long long modified_ns;
    int is_regular;
    int is_socket;
};

/// fstat(2) of `fd`; 0 on success, else -1 with errno set.
int depot_fstat(int fd, struct depot_file_status *out);

/// stat(2) of `path`; 0 on success, else -1 with errno set.
int depot_stat(const char *path, struct depot_file_status *out);

/// mallopt(M_MMAP_THRESHOLD, bytes): allocations of `bytes` and more are
/// mapped, and unmapped when freed, instead of glibc's moving threshold, which
/// keeps large freed buffers in the heap. Returns mallopt's result (1 on
/// success). A shim because Swift's Glibc module does not carry <malloc.h>.
int depot_set_mmap_threshold(int bytes);

#endif
