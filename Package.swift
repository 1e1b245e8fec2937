// swift-tools-version:6.1
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "Depot",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "DepotEngine", targets: ["DepotEngine"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
    ],
    targets: [
        // The engine: schema, stores, the store actor, fetch and predicates,
        // aggregates, duplicates, history. Knows nothing of HTTP or systemd.
        .target(
            name: "DepotEngine",
            dependencies: [
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ],
            swiftSettings: swiftSettings
        ),
        // The import benchmark (bench/run-import).
        .executableTarget(
            name: "ImportBench",
            dependencies: ["DepotEngine"],
            path: "bench/ImportBench",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "DepotEngineTests",
            dependencies: ["DepotEngine"],
            // Third-party corpora, read by path from the tests (see Fixtures/README.md).
            exclude: ["Fixtures"],
            swiftSettings: swiftSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
