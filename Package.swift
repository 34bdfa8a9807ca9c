// swift-tools-version:6.2
// The client kit: the package an app adds. Its graph holds only what the client modules use; the
// reference server, the `outpost` CLI, the benchmark and the integration tests are the package in
// `Server/`, which depends on this one by path.
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
        // Outpost's shared internals, for the server package in `Server/`; every declaration is SPI
        // (`@_spi(OutpostInternal)`), so the product offers no API of its own.
        .library(name: "_OutpostSupport", targets: ["OutpostSupport"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        // 3.x or 4.x (the server's jwt-kit 5 needs 4).
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        // AsyncHTTPClient's tracer, turned off in the default transport when none is bootstrapped.
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.3.0"),
    ],
    targets: [
        // Shared internals (SPI, for this package and `Server/`): the deadline race, atomic file
        // writes, file locks, a thread pool for blocking work, `Duration` conversions.
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
                // ID token signatures: CryptoKit and Security on Apple platforms; swift-crypto's RSA
                // (BoringSSL, already built by swift-crypto there) elsewhere.
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto", condition: .when(platforms: nonApple)),
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
        // Compiles a middleware, a transport and a log handler with `import Outpost` alone.
        .testTarget(name: "OutpostUmbrellaTests", dependencies: ["Outpost"], swiftSettings: strict),
    ]
)

// DocC (`swift package generate-documentation`) only where asked for, so that an app resolving this
// package does not fetch the plugin: `OUTPOST_DOCS=1 swift package generate-documentation ...`.
if Context.environment["OUTPOST_DOCS"] != nil {
    package.dependencies.append(.package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"))
}
