import Foundation
import Hummingbird
import OutpostCore

/// `GET /health` and `GET /openapi.json`.
struct ServiceRoutes: Sendable {
    let storage: any Storage

    func add(to router: Router<OutpostRequestContext>) {
        router.get("/health") { _, _ in
            do {
                try await storage.checkHealth()
                return Response.json([
                    "status": "ok", "version": .string(OutpostVersion.string),
                    "schema_version": .int(try await storage.schemaVersion()),
                ])
            } catch {
                return Response.json(
                    ["status": "unavailable", "version": .string(OutpostVersion.string)], status: .serviceUnavailable)
            }
        }
        router.get("/openapi.json") { _, _ in
            Response.bytes(Data(OpenAPIDocument.json.utf8), contentType: "application/json")
        }
    }
}
