import Foundation

/// What ``BackgroundFiles`` needs to finish a transfer, kept in the task's `taskDescription`
/// (JSON), which the system gives back after the app was relaunched.
///
/// The text comes back from outside the process, so ``init(parsing:)`` bounds and checks every
/// field before the transfer is trusted with a path.
struct BackgroundTransferDescription: Codable, Sendable, Equatable {
    enum Kind: String, Codable, Sendable {
        case upload, download
    }

    /// The format of this text; a description of another version is refused.
    var version = 1
    var kind: Kind
    /// The upload id for an upload; a random id for a download.
    var id: String
    /// The file's name on the server.
    var name: String
    /// The local file: the source of an upload, the destination of a download.
    var path: String
    /// Bytes already on the server (upload) or in `<path>.part` (download) when this task started.
    var offset: Int64 = 0
    /// Where the transfer started, for ``FileUploadResult/resumedFrom`` and ``FileDownloadResult/resumedFrom``.
    var resumedFrom: Int64 = 0
    /// How many more times a broken task is started again.
    var resumesLeft: Int
    /// Upload only: the file's size, SHA-256 (lowercase hex) and media type.
    var size: Int64?
    var sha256: String?
    var contentType: String?

    /// The longest description accepted.
    static let maxBytes = 4096

    /// The description in `text`, checked.
    ///
    /// - Throws: ``OutpostError/Code/invalidRequest`` when the text is longer than ``maxBytes``,
    ///   not a description of this version, or has a field out of bounds.
    init(parsing text: String) throws(OutpostError) {
        guard text.utf8.count <= Self.maxBytes else {
            throw Self.refusal("is \(text.utf8.count) bytes long, more than the \(Self.maxBytes) of any Outpost wrote")
        }
        let decoded: Self
        do {
            decoded = try JSONDecoder().decode(Self.self, from: Data(text.utf8))
        } catch {
            throw Self.refusal("is not the JSON of a background transfer")
        }
        if let problem = decoded.problem { throw Self.refusal(problem) }
        self = decoded
    }

    init(kind: Kind, id: String, name: String, path: String, resumesLeft: Int) {
        self.kind = kind
        self.id = id
        self.name = name
        self.path = path
        self.resumesLeft = resumesLeft
    }

    /// The JSON kept in `taskDescription`.
    var text: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        // Encoding a struct of strings and numbers cannot fail.
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    /// What is wrong with the fields, if anything.
    var problem: String? {
        guard version == 1 else { return "has version \(version); this SDK reads version 1" }
        guard OutpostFiles.isValidName(name) else { return "names a file the server does not accept" }
        guard Self.isValidID(id) else { return "has an id that is not 16–64 letters, digits, '_' or '-'" }
        guard path.hasPrefix("/"), path.utf8.count <= 1024, !path.contains("\0"), !path.split(separator: "/").contains("..")
        else { return "has a local path that is not an absolute path of at most 1024 bytes" }
        guard offset >= 0, resumedFrom >= 0, (0...100).contains(resumesLeft) else { return "has a negative offset or count" }
        switch kind {
        case .download:
            guard size == nil, sha256 == nil, contentType == nil else { return "has upload fields on a download" }
        case .upload:
            guard let size, size >= offset, let sha256, sha256.utf8.count == 64,
                sha256.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }),
                let contentType, (1...255).contains(contentType.utf8.count),
                contentType.utf8.allSatisfy({ (0x20...0x7E).contains($0) })
            else { return "lacks the size, SHA-256 or media type of its upload" }
        }
        return nil
    }

    /// The server's rule for upload ids: 16–64 letters, digits, `_` or `-`.
    static func isValidID(_ id: String) -> Bool {
        (16...64).contains(id.utf8.count)
            && id.utf8.allSatisfy { byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x5F
                    || byte == 0x2D
            }
    }

    static func refusal(_ problem: String) -> OutpostError {
        OutpostError(
            .invalidRequest, "A background task's description \(problem), so the transfer cannot be finished",
            suggestion:
                "Start the transfer again with BackgroundFiles; tasks that another library started on the same session are not Outpost's"
        )
    }

    var transfer: BackgroundTransfer {
        BackgroundTransfer(id: id, kind: kind == .upload ? .upload : .download, name: name, file: URL(fileURLWithPath: path))
    }
}
