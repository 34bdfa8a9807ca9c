// swift-tools-version:6.2
import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

/// Platforms where AsyncHTTPClient is the default transport (and NIO is imported by OutpostCore).
let nonApple: [Platform] = [.linux, .android, .windows, .openbsd]

let package = Package(
    name: "Outpost",
    // `Mutex` (Synchronization), used by the client modules, needs these releases.
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2), .macCatalyst(.v18)],
    products: [
        .library(name: "Outpost", targets: ["Outpost"]),
        .library(name: "OutpostCore", targets: ["OutpostCore"]),
        .library(name: "OutpostAuth", targets: ["OutpostAuth"]),
        .library(name: "OutpostCallbacks", targets: ["OutpostCallbacks"]),
        .library(name: "OutpostPlugins", targets: ["OutpostPlugins"]),
        .library(name: "OutpostTesting", targets: ["OutpostTesting"]),
        .library(name: "OutpostExpressions", targets: ["OutpostExpressions"]),
        .library(name: "OutpostServer", targets: ["OutpostServer"]),
        .executable(name: "outpost", targets: ["outpost"]),
        .executable(name: "outpost-bench", targets: ["outpost-bench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        // 3.x or 4.x: jwt-kit 5 needs swift-crypto 4.
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth.git", from: "2.5.0"),
        .package(url: "https://github.com/vapor/sqlite-nio.git", from: "1.13.2"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.7.1"),
        // The PostgreSQL storage backend.
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        // `swift package generate-documentation` (CI builds the DocC catalogs with warnings as errors).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        // AsyncHTTPClient's tracer, turned off in the default transport when none is bootstrapped.
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.3.0"),
    ],
    targets: [
        // Shared internals (`package` access): the deadline race, atomic file writes, file locks,
        // a thread pool for blocking work, `Duration` conversions. Not a product.
        .target(name: "OutpostSupport", swiftSettings: strict),
        .target(
            name: "OutpostCore",
            dependencies: [
                "OutpostSupport",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "HTTPTypesFoundation", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                // SHA-256 of files moved by `OutpostFiles`.
                .product(name: "Crypto", package: "swift-crypto"),
                .product(
                    name: "AsyncHTTPClient", package: "async-http-client", condition: .when(platforms: nonApple)),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(platforms: nonApple)),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .when(platforms: nonApple)),
                .product(name: "Tracing", package: "swift-distributed-tracing", condition: .when(platforms: nonApple)),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "OutpostAuth",
            dependencies: [
                "OutpostCore", "OutpostSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .target(name: "OutpostCallbacks", dependencies: ["OutpostSupport"], swiftSettings: strict),
        .target(name: "OutpostExpressions", swiftSettings: strict),
        .target(
            name: "OutpostPlugins",
            dependencies: ["OutpostCore", "OutpostAuth", "OutpostCallbacks", "OutpostSupport"],
            swiftSettings: strict
        ),
        // A scriptable transport for app authors' tests (and this package's own unit tests).
        .target(
            name: "OutpostTesting",
            dependencies: [
                "OutpostCore",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "HTTPTypesFoundation", package: "swift-http-types"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "Outpost",
            dependencies: [
                "OutpostCore", "OutpostAuth", "OutpostCallbacks", "OutpostPlugins",
                // Re-exported: a middleware, a transport or a log handler needs only `import Outpost`.
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "OutpostServer",
            dependencies: [
                "OutpostCore", "OutpostExpressions", "OutpostSupport",
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
                "Outpost", "OutpostCallbacks", "OutpostExpressions", "OutpostServer",
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
                "Outpost", "OutpostCallbacks", "OutpostCore", "OutpostServer", "OutpostServerTesting", "OutpostSupport",
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
        // Helpers shared by the test targets (`Gate`).
        .target(
            name: "OutpostTestSupport", dependencies: ["OutpostSupport"], path: "Tests/OutpostTestSupport",
            swiftSettings: strict),
        .testTarget(
            name: "OutpostSupportTests", dependencies: ["OutpostSupport", "OutpostTestSupport"], swiftSettings: strict),
        .testTarget(
            name: "OutpostCoreTests",
            dependencies: [
                "OutpostCore", "OutpostSupport", "OutpostTestSupport", "OutpostTesting",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "HTTPTypesFoundation", package: "swift-http-types"),
            ],
            swiftSettings: strict),
        .testTarget(
            name: "OutpostAuthTests",
            dependencies: [
                "OutpostAuth", "OutpostCore", "OutpostSupport", "OutpostTestSupport", "OutpostTesting",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        .testTarget(
            name: "OutpostCallbacksTests", dependencies: ["OutpostCallbacks", "OutpostSupport", "OutpostTestSupport"],
            swiftSettings: strict),
        .testTarget(name: "OutpostExpressionsTests", dependencies: ["OutpostExpressions"], swiftSettings: strict),
        .testTarget(
            name: "OutpostPluginsTests",
            dependencies: [
                "OutpostPlugins", "OutpostCallbacks", "OutpostCore", "OutpostTestSupport", "OutpostTesting",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: strict),
        .testTarget(
            name: "OutpostServerTests",
            dependencies: [
                "OutpostServer", "OutpostServerTesting", "OutpostCore", "OutpostExpressions", "OutpostSupport",
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
        // Compiles a middleware, a transport and a log handler with `import Outpost` alone.
        .testTarget(name: "OutpostUmbrellaTests", dependencies: ["Outpost"], swiftSettings: strict),
        .testTarget(
            name: "OutpostCLITests",
            dependencies: ["outpost", "OutpostServer", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: strict),
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "Outpost", "OutpostCore", "OutpostServer", "OutpostServerTesting", "OutpostTestSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                "OutpostSupport",
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
    ]
)
