#ifndef DEPOT_TOML_GUARD_H
#define DEPOT_TOML_GUARD_H

/// What depot_toml_guard found.
typedef enum {
    DEPOT_TOML_OK = 0,        ///< toml++ read the text
    DEPOT_TOML_ERROR = 1,     ///< toml++ refused it with a parse error (TOMLKit reports it)
    DEPOT_TOML_ABORTED = 2,   ///< toml++ stopped at one of its internal assertions
} depot_toml_outcome;

/// Parses `text` with toml++ (through TOMLKit's C interface) so that an
/// assertion of the parser (abort) returns DEPOT_TOML_ABORTED instead of
/// ending the process. Calls are serialized; the table read is not kept.
depot_toml_outcome depot_toml_guard(const char *text);

#endif
