@_spi(OutpostInternal) import OutpostSupport

// x-callback-url parameters are percent-encoded with `OutpostSupport.PercentEncoding`: every UTF-8
// byte outside the unreserved set `A-Z a-z 0-9 - . _ ~` becomes `%XX` with upper-case hex.
//
// Decoding happens in ``CallbackParser``, while it scans: `%XX` (either case of hex) becomes the
// byte `XX`, exactly once; `+` stays a plus; a `%` that is not followed by two hex digits is kept
// as it is; bytes that do not form valid UTF-8 after decoding become U+FFFD.
extension PercentEncoding {
    /// Percent-encodes each `/`-separated segment of a path, keeping the slashes.
    static func encodePath(_ path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: false)
            .map { encode(String($0)) }
            .joined(separator: "/")
    }
}
