#ifndef DEPOT_SQLITE_H
#define DEPOT_SQLITE_H

/// Turns off SQLite's memory statistics, whose global mutex every
/// allocation takes (SQLITE_CONFIG_MEMSTATUS). Must run before SQLite
/// initializes; returns SQLITE_OK, or SQLITE_MISUSE when it is too late.
/// A C shim because sqlite3_config is variadic, which Swift cannot call.
int depot_sqlite_disable_memstatus(void);

#endif
