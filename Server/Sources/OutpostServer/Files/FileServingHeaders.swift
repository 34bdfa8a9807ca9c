import Foundation
import HTTPTypes

/// The header fields that keep a user's file from running as the server's origin.
///
/// A file comes back with the `Content-Type` its uploader chose, so an HTML or SVG file opened in a
/// browser would run its scripts with the server's cookies and pages (the sign-in forms) in reach.
/// Every download therefore carries:
/// - `X-Content-Type-Options: nosniff`, so a browser never guesses a more dangerous type;
/// - `Content-Security-Policy: default-src 'none'; style-src 'unsafe-inline'; sandbox`: nothing is
///   loaded or run, and a document shown anyway gets a unique opaque origin (no cookies, no storage,
///   no script);
/// - `Content-Disposition: attachment` for every type but a short list that browsers only display
///   (raster images, audio, video, plain text, JSON), so that a document type is saved, not opened.
///   The list is of safe types rather than a list of dangerous ones: a type nobody thought of is
///   downloaded.
///
/// Operators of public deployments can also serve downloads from another origin altogether
/// (``ServerConfiguration/filesURL``).
enum FileServingHeaders {
    static let contentSecurityPolicy = "default-src 'none'; style-src 'unsafe-inline'; sandbox"

    /// Media types (lowercased, without parameters) that browsers display without running anything.
    /// SVG is an image that runs scripts, so it is not here.
    static let inlineTypes: Set<String> = [
        "image/png", "image/jpeg", "image/gif", "image/webp", "image/avif", "image/bmp", "image/x-icon",
        "image/vnd.microsoft.icon", "text/plain", "application/json", "application/octet-stream",
    ]
    /// Families whose every member is displayed as media.
    static let inlineFamilies = ["audio/", "video/"]

    /// The fields for a download of `name` stored with `contentType`.
    static func fields(name: String, contentType: String) -> HTTPFields {
        var fields = HTTPFields()
        fields[.xContentTypeOptions] = "nosniff"
        fields[.contentSecurityPolicy] = contentSecurityPolicy
        let disposition = isInline(contentType) ? "inline" : "attachment"
        fields[.contentDisposition] = "\(disposition); filename*=UTF-8''\(encodedFilename(name))"
        return fields
    }

    /// Whether `contentType` is one a browser only displays: its essence (the part before `;`, without
    /// spaces, lowercased) is on the list or in a listed family.
    static func isInline(_ contentType: String) -> Bool {
        let essence =
            contentType.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        return inlineTypes.contains(essence) || inlineFamilies.contains { essence.hasPrefix($0) && essence.count > $0.count }
    }

    /// `name` as an RFC 8187 ext-value (UTF-8, percent-encoded but for attr-chars), for `filename*`.
    static func encodedFilename(_ name: String) -> String {
        var encoded = ""
        for byte in name.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "+"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"),
                UInt8(ascii: "|"), UInt8(ascii: "~"):
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".utf8)
                encoded += "%" + String(decoding: [hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]], as: UTF8.self)
            }
        }
        return encoded
    }
}
