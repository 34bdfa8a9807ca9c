// swift-tools-version:6.2
// The notes example app: `NotesModel` (the note, the store's setup, the screens' logic; built and
// tested on Linux by Server/, where it is linked as Sources/NotesModel) and `NotesApp`, its SwiftUI
// app. Open this folder in Xcode to run it on a Mac (`swift run NotesApp` on macOS), or add the
// two folders to an iOS app target that depends on the Outpost package.
import PackageDescription

let package = Package(
    name: "NotesApp",
    platforms: [.macOS(.v15), .iOS(.v18)],
    dependencies: [.package(name: "Outpost", path: "../..")],
    targets: [
        .target(
            name: "NotesModel",
            dependencies: [
                .product(name: "OutpostCore", package: "Outpost"), .product(name: "OutpostSync", package: "Outpost"),
            ],
            path: "NotesModel"),
        .executableTarget(
            name: "NotesApp",
            dependencies: [
                "NotesModel", .product(name: "Outpost", package: "Outpost"),
                .product(name: "OutpostSync", package: "Outpost"),
            ],
            path: "NotesApp"),
    ]
)
