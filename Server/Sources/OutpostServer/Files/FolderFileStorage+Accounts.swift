import Foundation
import _NIOFileSystem

extension FolderFileStorage {
    /// Reads the metadata of every file to find `owner`'s (the folder keeps no index by owner: a
    /// deleted account is rare), then removes or rewrites each, and removes `owner`'s `.part` files.
    package func removeFiles(owner: String, transferringTo recipient: String?) async throws -> Int {
        var count = 0
        for entry in try await entries(of: objects) where entry.hasSuffix(".json") {
            let data = try? await fileSystem.withFileHandle(forReadingAt: FilePath(objects + "/" + entry)) { handle in
                try await handle.readToEnd(maximumSizeAllowed: .kibibytes(64))
            }
            guard let data, var file = try? Self.decode(data), file.owner == owner else { continue }
            if let recipient {
                file.owner = recipient
                try await writeMetadata(file)
                tally.setFile(file.name, owner: FileNames.digest(recipient), bytes: file.size)
                count += 1
            } else if try await deleteFile(named: file.name) {
                count += 1
            }
        }
        let ownerKey = FileNames.digest(owner)
        for entry in try await entries(of: uploads) {
            guard let parts = Self.partName(entry), parts.owner == ownerKey else { continue }
            _ = try? await fileSystem.removeItem(at: FilePath(uploads + "/" + entry), strategy: .platformDefault)
            tally.removeUpload(parts.digest)
        }
        return count
    }
}
