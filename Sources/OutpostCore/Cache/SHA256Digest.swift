import Crypto
@_spi(OutpostInternal) import OutpostSupport

/// SHA-256 names for the cache: entry keys and the hashed account identity (swift-crypto's digest,
/// spelled as lowercase hexadecimal).
@_spi(OutpostInternal) public enum SHA256Digest {
    /// The digest of `bytes`.
    @_spi(OutpostInternal) public static func hash<Bytes: Sequence>(_ bytes: Bytes) -> [UInt8] where Bytes.Element == UInt8 {
        Array(SHA256.hash(data: Array(bytes)))
    }

    /// The digest of `text`'s UTF-8 bytes as 64 lowercase hexadecimal digits.
    @_spi(OutpostInternal) public static func hex(_ text: String) -> String {
        hexString(hash(text.utf8))
    }

    /// `bytes` as lowercase hexadecimal digits, two per byte.
    @_spi(OutpostInternal) public static func hexString(_ bytes: [UInt8]) -> String {
        Hex.string(bytes)
    }
}
