import Foundation
import OpenAPIRuntime
@_spi(OutpostInternal) import OutpostCore

/// Reads a runtime body into memory, up to a bound.
enum BodyCollector {
    /// The bytes of `body`; throws `tooLarge(limit)` as soon as the body is known to exceed `limit`
    /// bytes (from its declared length, or once more than `limit` bytes have arrived).
    static func collect(_ body: HTTPBody, upTo limit: Int, tooLarge: (Int) -> OutpostError) async throws -> Data {
        var data = Data()
        if case .known(let length) = body.length {
            guard length <= Int64(limit) else { throw tooLarge(limit) }
            data.reserveCapacity(Int(length))
        }
        for try await chunk in body {
            guard chunk.count <= limit - data.count else { throw tooLarge(limit) }
            data.append(contentsOf: chunk)
        }
        return data
    }
}
