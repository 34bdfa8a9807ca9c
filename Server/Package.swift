// swift-tools-version:6.2
// The reference server, the `outpost` command-line tool, the benchmark and every test: a package of
// its own, so that the client package at the repository root (which this one depends on by path)
// stays light for the apps that add it. The client modules' unit tests live here too: one build of
// this package compiles the dependency stack and the client modules once, for the server, the CLI,
// the benchmark and all the tests.
import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

/// A product of the client package at the repository root.
func client(_ product: String) -> Target.Dependency { .product(name: product, package: "Outpost") }

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
        // STARTTLS and implicit TLS for the mail sender (already built as AsyncHTTPClient's dependency).
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        // The operator's mail templates.
        .package(url: "https://github.com/hummingbird-project/swift-mustache.git", from: "2.1.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth.git", from: "2.5.0"),
        .package(url: "https://github.com/vapor/sqlite-nio.git", from: "1.13.2"),
        // 5.8: identity tokens verified with their audience (`expectedAudiences`).
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.8.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        // OutpostOpenAPI's tests drive its transport and middleware through the runtime's protocols.
        .package(url: "https://github.com/apple/swift-openapi-runtime", from: "1.13.4"),
        // The benchmark's hand-written baseline for the offline store's local queries.
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        // `swift package generate-documentation` (CI builds the DocC catalogs with warnings as errors).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        // Request, storage and sign-in metrics; the Prometheus text of `--metrics-port` and `GET /metrics`.
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        // Spans around requests and storage operations (InMemoryTracing: the tests' tracer).
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
    ],
    targets: [
        .target(
            name: "OutpostServer",
            dependencies: [
                client("OutpostCore"), client("OutpostExpressions"),
                client("_OutpostSupport"),
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
                // Discovery documents and key sets of upstream OpenID Connect providers.
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                // The mail sender: TLS for SMTP, templates for the messages.
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Instrumentation", package: "swift-distributed-tracing"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "outpost",
            dependencies: [
                client("Outpost"), client("OutpostCore"),
                client("OutpostCallbacks"),
                client("OutpostExpressions"), "OutpostServer",
                client("OutpostSync"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                // The demo's console visit reads each redirect itself (to keep the session cookie).
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
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
                client("Outpost"), client("OutpostCallbacks"),
                client("OutpostCore"), client("OutpostExpressions"),
                "OutpostServer", "OutpostServerTesting",
                client("OutpostSync"), .product(name: "GRDB", package: "GRDB.swift"),
                client("_OutpostSupport"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "OutpostServerTests",
            dependencies: [
                "OutpostServer", "OutpostServerTesting", client("OutpostCore"),
                client("OutpostExpressions"), client("_OutpostSupport"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                "OutpostTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: strict),
        .testTarget(
            name: "OutpostCLITests",
            dependencies: [
                "outpost", "OutpostServer", .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "JWTKit", package: "jwt-kit"),
            ],
            swiftSettings: strict),
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                client("Outpost"), client("OutpostCore"), "OutpostServer",
                client("OutpostExpressions"), "OutpostServerTesting", "OutpostTestSupport",
                client("OutpostSync"),
                .product(name: "Hummingbird", package: "hummingbird"),
                client("_OutpostSupport"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: strict
        ),
        // Helpers shared by the test targets (`Gate`, `eventually(within:)`, child processes).
        .target(
            name: "OutpostTestSupport",
            dependencies: [
                client("_OutpostSupport"),
                // `W3CTestTracer`: an in-memory tracer that propagates `traceparent`.
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ],
            path: "Tests/OutpostTestSupport",
            swiftSettings: strict),

        // The client modules' unit tests (no server: scripted transports, local listeners, fakes).
        .testTarget(
            name: "OutpostSupportTests", dependencies: [client("_OutpostSupport"), "OutpostTestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "OutpostCoreTests",
            dependencies: [
                // OutpostExpressions: the parser the server reads typed filters with.
                client("OutpostCore"), client("OutpostExpressions"), client("_OutpostSupport"), "OutpostTestSupport",
                client("OutpostTesting"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "HTTPTypesFoundation", package: "swift-http-types"),
            ],
            swiftSettings: strict),
        .testTarget(
            name: "OutpostAuthTests",
            dependencies: [
                client("OutpostAuth"), client("OutpostCore"), client("_OutpostSupport"), "OutpostTestSupport",
                client("OutpostTesting"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        .testTarget(
            name: "OutpostCallbacksTests",
            dependencies: [client("OutpostCallbacks"), client("_OutpostSupport"), "OutpostTestSupport"],
            swiftSettings: strict),
        .testTarget(name: "OutpostExpressionsTests", dependencies: [client("OutpostExpressions")], swiftSettings: strict),
        .testTarget(
            name: "OutpostOpenAPITests",
            dependencies: [
                client("OutpostOpenAPI"), client("OutpostAuth"), client("OutpostCore"), client("OutpostTesting"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "HTTPTypesFoundation", package: "swift-http-types"),
            ],
            swiftSettings: strict),
        .testTarget(
            name: "OutpostPluginsTests",
            dependencies: [
                client("OutpostPlugins"), client("OutpostCallbacks"), client("OutpostCore"), "OutpostTestSupport",
                client("OutpostTesting"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: strict),
        .testTarget(
            name: "OutpostSyncTests",
            dependencies: [
                client("OutpostSync"), client("OutpostCore"), client("OutpostExpressions"),
                .product(name: "GRDB", package: "GRDB.swift"),
                // Observation waits; ProcessExit (a store shared with a child process).
                "OutpostTestSupport",
            ],
            swiftSettings: strict),
        // The shared model of the example app Examples/NotesApp (linked here as Sources/NotesModel):
        // built and tested with this package, on the client modules it already builds.
        .target(
            name: "NotesModel", dependencies: [client("OutpostCore"), client("OutpostSync")], swiftSettings: strict),
        .testTarget(
            name: "NotesModelTests",
            dependencies: ["NotesModel", client("OutpostCore"), client("OutpostSync"), "OutpostTestSupport"],
            swiftSettings: strict),
        // Compiles a middleware, a transport and a log handler with `import Outpost` alone.
        .testTarget(name: "OutpostUmbrellaTests", dependencies: [client("Outpost")], swiftSettings: strict),
    ]
)

// The client that Apple's swift-openapi-generator makes from the served OpenAPI document
// (Examples/GeneratedClient, linked here as Sources/generated-client-check), built with this package
// when asked for, so that CI compiles the client stack once:
// `OUTPOST_GENERATED_CLIENT=1 swift build --package-path Server --product generated-client-check`.
// Off by default: the generator and OpenAPIKit add minutes to a build that does not run the check.
if Context.environment["OUTPOST_GENERATED_CLIENT"] != nil {
    package.dependencies.append(.package(url: "https://github.com/apple/swift-openapi-generator", exact: "1.14.3"))
    package.targets.append(
        .executableTarget(
            name: "generated-client-check",
            dependencies: [
                client("Outpost"), client("OutpostOpenAPI"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")],
            plugins: [.plugin(name: "OpenAPIGenerator", package: "swift-openapi-generator")]
        ))
}
