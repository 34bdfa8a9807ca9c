import Foundation
import Hummingbird
import Logging
@_spi(OutpostInternal) import OutpostCore

/// A small server in the test suite that answers lists as {"count", "next", "previous", "results"},
/// the Django REST framework shape, on 127.0.0.1 port 0.
enum RestShapeServer {
    static func start(items: Int) async throws -> (URL, @Sendable () async -> Void) {
        let router = Router()
        router.get("/api/books/") { request, _ -> Response in
            let page = Int(request.uri.queryParameters["page"].map(String.init) ?? "1") ?? 1
            let size = Int(request.uri.queryParameters["page_size"].map(String.init) ?? "4") ?? 4
            let start = (page - 1) * size
            let slice = start < items ? Array(start..<min(items, start + size)) : []
            let host = request.head.authority ?? "localhost"
            let next: JSONValue =
                start + size < items ? .string("http://\(host)/api/books/?page=\(page + 1)&page_size=\(size)") : .null
            let previous: JSONValue = page > 1 ? .string("http://\(host)/api/books/?page=\(page - 1)&page_size=\(size)") : .null
            let body: JSONValue = [
                "count": .int(items), "next": next, "previous": previous,
                "results": .array(slice.map { ["id": .int($0), "title": .string("Book \($0)")] }),
            ]
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(bytes: body.jsonData())))
        }
        let (base, stop) = try await LocalApplication.start(router, label: "rest-shape-server")
        return (base.appendingPathComponent("api"), stop)
    }

}
