import Foundation
import Testing

@_spi(OutpostInternal) @testable import OutpostCore

@Suite("Error codes are declared in one place")
struct ErrorCodeTests {
    /// The Errors article of OutpostCore's catalog.
    static let article = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
        .appending(path: "Sources/OutpostCore/OutpostCore.docc/Errors.md")

    @Test("the list has no two codes with one raw value, and holds the codes other modules use")
    func unique() {
        let raw = OutpostError.Code.all.map(\.rawValue)
        #expect(Set(raw).count == raw.count)
        #expect(OutpostError.Code.all.contains(.untrustedDestination))
        #expect(OutpostError.Code.all.contains(.missingIdentity))
        #expect(OutpostError.Code.all.contains(.connectionLost))
    }

    @Test("the Errors article documents every code of the list")
    func documented() throws {
        let text = try String(contentsOf: Self.article, encoding: .utf8)
        for code in OutpostError.Code.all {
            #expect(text.contains("``OutpostError/Code/\(code.rawValue)``"), "\(code) is missing from Errors.md")
        }
    }
}
