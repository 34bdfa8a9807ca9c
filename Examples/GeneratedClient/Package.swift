// swift-tools-version:6.2
import PackageDescription

// A client generated at build time by Apple's swift-openapi-generator from the document the Outpost
// server serves (`openapi.json`, a copy of `GET /openapi.json`), driven against a running
// `outpost serve` through OutpostOpenAPI's transport and Outpost's `AuthMiddleware`.
// `.ci/openapi-generated-client.sh` builds and runs it; see `README.md`.
let package = Package(
    name: "GeneratedClient",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2), .macCatalyst(.v18)],
    dependencies: [
        // The Outpost client package (the repository's root).
        .package(name: "Outpost", path: "../.."),
        .package(url: "https://github.com/apple/swift-openapi-generator", exact: "1.14.3"),
        .package(url: "https://github.com/apple/swift-openapi-runtime", from: "1.13.4"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
    ],
    targets: [
        .executableTarget(
            name: "generated-client-check",
            dependencies: [
                .product(name: "Outpost", package: "Outpost"),
                .product(name: "OutpostOpenAPI", package: "Outpost"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")],
            plugins: [.plugin(name: "OpenAPIGenerator", package: "swift-openapi-generator")]
        )
    ]
)
