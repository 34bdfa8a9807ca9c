import Foundation
import Hummingbird
@_spi(OutpostInternal) import OutpostCore

/// `GET /health` and `GET /openapi.json`.
struct ServiceRoutes: Sendable {
    let storage: any Storage

    func add(to router: Router<OutpostRequestContext>) {
        router.get("/health") { _, _ in
            do {
                let schema = try await storage.health()
                return Response.json([
                    "status": "ok", "version": .string(OutpostVersion.string), "schema_version": .int(schema),
                ])
            } catch {
                return Response.json(
                    ["status": "unavailable", "version": .string(OutpostVersion.string)], status: .serviceUnavailable)
            }
        }
        router.get("/openapi.json") { _, _ in
            // Changes only with a new server version: a client may keep it for five minutes.
            Response.bytes(
                Data(OpenAPIDocument.json.utf8), contentType: "application/json", headers: [.cacheControl: "public, max-age=300"])
        }
    }
}
