import Foundation
import OutpostSync

/// A store in a fresh temporary folder, removed when `body` returns.
@discardableResult
func withStore<T>(_ body: (SyncedStore, URL) async throws -> T) async throws -> T {
    let folder = FileManager.default.temporaryDirectory.appending(path: "outpost-sync-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: folder) }
    return try await body(try SyncedStore(folder: folder), folder)
}
