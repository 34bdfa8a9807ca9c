// swift-tools-version:6.2
// The reference server, the `outpost` command-line tool, the benchmark and the integration tests: a
// package of its own, so that the client package at the repository root (which this one depends on
// by path) stays light for the apps that add it.
import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "OutpostServer",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "OutpostServer", targets: ["OutpostServer"]),
        .executable(name: "outpost", targets: ["outpost"]),
        .executable(name: "outpost-bench", targets: ["outpost-bench"]),
    ],
    dependencies: [
        .package(name: "Outpost", path: ".."),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth.git", from: "2.5.0"),
        .package(url: "https://github.com/vapor/sqlite-nio.git", from: "1.13.2"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.7.1"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        // The benchmark's hand-written baseline for the offline store's local queries.
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        // `swift package generate-documentation` (CI builds the DocC catalogs with warnings as errors).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        .target(
            name: "OutpostServer",
            dependencies: [
                .product(name: "OutpostCore", package: "Outpost"), .product(name: "OutpostExpressions", package: "Outpost"),
                .product(name: "_OutpostSupport", package: "Outpost"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "_NIOFileSystem", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "outpost",
            dependencies: [
                .product(name: "Outpost", package: "Outpost"), .product(name: "OutpostCore", package: "Outpost"),
                .product(name: "OutpostCallbacks", package: "Outpost"),
                .product(name: "OutpostExpressions", package: "Outpost"), "OutpostServer",
                .product(name: "OutpostSync", package: "Outpost"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // What the server's tests and the benchmark need and the server does not ship (not a product):
        // scratch databases on either backend, token expiry, the download meter, change-feed orderings.
        .target(
            name: "OutpostServerTesting",
            dependencies: [
                "OutpostServer",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "outpost-bench",
            dependencies: [
                .product(name: "Outpost", package: "Outpost"), .product(name: "OutpostCallbacks", package: "Outpost"),
                .product(name: "OutpostCore", package: "Outpost"), .product(name: "OutpostExpressions", package: "Outpost"),
                "OutpostServer", "OutpostServerTesting",
                .product(name: "OutpostSync", package: "Outpost"), .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "_OutpostSupport", package: "Outpost"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "OutpostServerTests",
            dependencies: [
                "OutpostServer", "OutpostServerTesting", .product(name: "OutpostCore", package: "Outpost"),
                .product(name: "OutpostExpressions", package: "Outpost"), .product(name: "_OutpostSupport", package: "Outpost"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                "OutpostTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict),
        .testTarget(
            name: "OutpostCLITests",
            dependencies: ["outpost", "OutpostServer", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: strict),
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                .product(name: "Outpost", package: "Outpost"), .product(name: "OutpostCore", package: "Outpost"), "OutpostServer",
                .product(name: "OutpostExpressions", package: "Outpost"), "OutpostServerTesting", "OutpostTestSupport",
                .product(name: "OutpostSync", package: "Outpost"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "_OutpostSupport", package: "Outpost"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
            ],
            swiftSettings: strict
        ),
        // The test helpers of the client package's tests (`Gate`, `eventually(within:)`, child
        // processes), shared through a symbolic link: a test-only target is not a product.
        .target(
            name: "OutpostTestSupport", dependencies: [.product(name: "_OutpostSupport", package: "Outpost")],
            path: "Tests/OutpostTestSupport", swiftSettings: strict),
    ]
)
