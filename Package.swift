// swift-tools-version:6.1
import PackageDescription

// scripts/fuzz builds DepotFuzz with DEPOT_FUZZ_BUILD=1 in the release
// build's folder (.build-deb): the project's own modules take libFuzzer's
// coverage, AddressSanitizer and -enable-testing (for @testable), while the
// libraries they use keep the release build's objects, which CI would
// otherwise build a second time with the sanitizers. Without the variable
// (every other build, and every package that depends on this one) the
// manifest has no unsafe flag.
let fuzzing: [SwiftSetting] =
    Context.environment["DEPOT_FUZZ_BUILD"] == "1"
    ? [
        .define("FUZZING"),
        .unsafeFlags([
            "-sanitize=address", "-sanitize-coverage=edge,trace-cmp,inline-8bit-counters,pc-table",
            "-enable-testing"
        ])
    ] : []

let swiftSettings: [SwiftSetting] =
    [
        .enableUpcomingFeature("ExistentialAny"),
        .enableUpcomingFeature("MemberImportVisibility"),
        .enableUpcomingFeature("InternalImportsByDefault")
    ] + fuzzing

let package = Package(
    name: "Depot",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "DepotEngine", targets: ["DepotEngine"]),
        .library(name: "DepotClient", targets: ["DepotClient"]),
        .executable(name: "depotd", targets: ["depotd"]),
        .executable(name: "depotctl", targets: ["depotctl"])
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // SHA-256 of a backup (DESIGN §20); already built for postgres-nio's SCRAM.
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-async-algorithms", from: "1.1.4"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/LebJe/TOMLKit", from: "0.6.0"),
        // The PostgreSQL backend (DESIGN §15).
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        // Tests only: reads docs/openapi.yaml as a YAML parser does.
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2")
    ],
    targets: [
        // The version, one constant that depotd, depotctl and DepotClient share.
        .target(name: "DepotVersion", swiftSettings: swiftSettings),
        // The control API's wire types, shared by depotd, DepotClient and
        // depotctl (issue 30): JSON values, and the requests, answers and
        // events as they move there. Foundation only.
        .target(name: "DepotWire", swiftSettings: swiftSettings),
        // The engine: schema, stores, the store actor, fetch and predicates,
        // aggregates, duplicates, history. Knows nothing of HTTP or systemd.
        // A C shim for sqlite3_config, which is variadic.
        .target(
            name: "CDepotSQLite",
            linkerSettings: [.linkedLibrary("sqlite3")]
        ),
        .target(
            name: "DepotEngine",
            dependencies: [
                "CDepotSQLite",
                // The vocabulary the engine shares with the wire: error
                // codes, JSON text and values, a job's counters.
                "DepotWire",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto")
            ],
            swiftSettings: swiftSettings
        ),
        // Stores on PostgreSQL (DESIGN §15), through postgres-nio: the same
        // schema, conflict policies and history as an SQLite store, written
        // with COPY into a staging table and one merging statement a batch.
        .target(
            name: "DepotPostgres",
            dependencies: [
                "DepotEngine",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio")
            ],
            swiftSettings: swiftSettings
        ),
        // libsystemd: sd_notify, sd_listen_fds, the journal.
        .systemLibrary(
            name: "CSystemd",
            pkgConfig: "libsystemd",
            providers: [.apt(["libsystemd-dev"])]
        ),
        // A parse of TOML that toml++'s assertions cannot abort (toml_guard.c).
        .target(
            name: "CTOMLGuard",
            dependencies: [.product(name: "TOMLKit", package: "TOMLKit")]
        ),
        // The console's files (DESIGN §19), embedded in depotd at build time
        // (Sources/CDepotConsole/console), and gzip from zlib to compress them.
        .target(
            name: "CDepotConsole",
            exclude: ["console"],
            linkerSettings: [.linkedLibrary("z")]
        ),
        // The service: configuration, jobs, control API, watched folders, systemd.
        .target(
            name: "DepotDaemon",
            dependencies: [
                "CDepotConsole",
                "DepotEngine",
                "DepotPostgres",
                "DepotVersion",
                "DepotWire",
                "CSystemd",
                "CTOMLGuard",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOExtras", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "TOMLKit", package: "TOMLKit"),
                .product(name: "AsyncAlgorithms", package: "swift-async-algorithms")
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "depotd",
            dependencies: [
                "DepotDaemon",
                "DepotVersion",
                "DepotEngine",
                "DepotWire",
                "DepotPostgres",
                .product(name: "ArgumentParser", package: "swift-argument-parser")
            ],
            swiftSettings: swiftSettings
        ),
        // The Swift client library (DESIGN §13): HTTP/1.1 over the daemon's
        // Unix socket through SwiftNIO's HTTP client codec. Knows nothing of
        // the engine or the daemon: only the control API.
        .target(
            name: "DepotClient",
            dependencies: [
                "DepotVersion",
                "DepotWire",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio")
            ],
            swiftSettings: swiftSettings
        ),
        // The command-line client, on DepotClient.
        .executableTarget(
            name: "depotctl",
            dependencies: [
                "DepotClient",
                "DepotVersion",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio")
            ],
            swiftSettings: swiftSettings
        ),
        // The example program of docs/swift-client.md, built and run by the tests.
        .executableTarget(
            name: "depot-client-example",
            dependencies: ["DepotClient"],
            path: "examples/swift-client",
            swiftSettings: swiftSettings
        ),
        // The import benchmark (bench/run-import).
        .executableTarget(
            name: "ImportBench",
            dependencies: ["DepotEngine", "DepotWire"],
            path: "bench/ImportBench",
            swiftSettings: swiftSettings
        ),
        // The PostgreSQL import benchmark (bench/pg-import).
        .executableTarget(
            name: "PGImportBench",
            dependencies: ["DepotEngine", "DepotPostgres", "DepotWire"],
            path: "bench/PGImportBench",
            swiftSettings: swiftSettings
        ),
        // Child executables of the tests, and what the tests read of them.
        .target(
            name: "ChildProcessSupport", dependencies: ["DepotEngine"], path: "Tests/ChildProcessSupport",
            swiftSettings: swiftSettings),
        // A host in a process of its own, which the lease test kills
        // (Tests/StoreContractTests/PostgreSQL/LeaseTests.swift).
        .executableTarget(
            name: "PGImportChild",
            dependencies: ["DepotEngine", "DepotPostgres", "ChildProcessSupport"],
            path: "Tests/PGImportChild",
            swiftSettings: swiftSettings
        ),
        // The child process the crash test kills (Tests/DepotEngineTests/Import/ImportCrashTests.swift).
        .executableTarget(
            name: "ImportChild",
            dependencies: ["DepotEngine", "ChildProcessSupport"],
            path: "Tests/ImportChild",
            swiftSettings: swiftSettings
        ),
        // Fuzz targets (scripts/fuzz): libFuzzer entry points, one module
        // each, run by name from one executable (DepotFuzz: one build, one
        // link), which replays files through the same checks in a normal build.
        .target(name: "FuzzSupport", path: "Fuzz/Support", swiftSettings: swiftSettings),
        .target(
            name: "FuzzPredicate", dependencies: ["DepotEngine", "FuzzSupport"],
            path: "Fuzz/Predicate", swiftSettings: swiftSettings),
        .target(
            name: "FuzzCSV", dependencies: ["DepotEngine", "FuzzSupport"],
            path: "Fuzz/CSV", swiftSettings: swiftSettings),
        .target(
            name: "FuzzInfer", dependencies: ["DepotEngine", "FuzzSupport"],
            path: "Fuzz/Infer", swiftSettings: swiftSettings),
        .target(
            name: "FuzzJSON", dependencies: ["DepotEngine", "FuzzSupport"],
            path: "Fuzz/JSON", swiftSettings: swiftSettings),
        .target(
            name: "FuzzConfig", dependencies: ["DepotDaemon", "DepotEngine", "FuzzSupport"],
            path: "Fuzz/Config", swiftSettings: swiftSettings),
        .target(
            name: "FuzzAPIBody", dependencies: ["DepotDaemon", "DepotEngine", "DepotWire", "FuzzSupport"],
            path: "Fuzz/APIBody", swiftSettings: swiftSettings),
        .executableTarget(
            name: "DepotFuzz",
            dependencies: [
                "FuzzSupport", "FuzzPredicate", "FuzzCSV", "FuzzInfer", "FuzzJSON", "FuzzConfig", "FuzzAPIBody"
            ],
            path: "Fuzz/Main", swiftSettings: swiftSettings,
            // (The driver then links AddressSanitizer's runtime.)
            linkerSettings: fuzzing.isEmpty ? [] : [.unsafeFlags(["-sanitize=address"])]),
        .testTarget(
            name: "DepotEngineTests",
            dependencies: [
                "DepotEngine", "CDepotSQLite", "ChildProcessSupport",
                .product(name: "GRDB", package: "GRDB.swift")
            ],
            // Third-party corpora, read by path from the tests (see Fixtures/README.md).
            exclude: ["Fixtures"],
            swiftSettings: swiftSettings
        ),
        // The store contract (StoreBackend and what is written once above
        // it) run against both backends as @Test(arguments:): an SQLite file
        // and a schema of a private PostgreSQL cluster (scripts/pg-cluster;
        // DEPOT_TEST_POSTGRES_URL); PostgreSQL/ holds what only a server
        // has (several hosts, leases, recovery targets, a commit's cut
        // connection).
        .testTarget(
            name: "StoreContractTests",
            dependencies: [
                "DepotPostgres", "DepotEngine", "ChildProcessSupport", .product(name: "GRDB", package: "GRDB.swift")
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "DepotDaemonTests",
            dependencies: [
                "DepotDaemon", "DepotEngine", "DepotClient", "DepotPostgres", "DepotWire", "ChildProcessSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"), .product(name: "Yams", package: "Yams")
            ],
            // The golden --help outputs, read by path; the C faults the tests
            // compile and preload into depotd.
            exclude: ["Golden", "Faults"],
            swiftSettings: swiftSettings
        )
    ],
    swiftLanguageModes: [.v6]
)
