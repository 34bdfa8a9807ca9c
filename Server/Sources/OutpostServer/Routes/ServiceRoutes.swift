import Foundation
import HTTPTypes
import Hummingbird
@_spi(OutpostInternal) import OutpostCore

/// `GET /health`, `GET /health/ready` and `GET /openapi.json`.
struct ServiceRoutes: Sendable {
    let storage: any Storage
    let load: ServerLoad

    func add(to router: Router<OutpostRequestContext>) {
        router.get("/health") { _, _ in
            do {
                let schema = try await storage.health()
                return Response.json([
                    "status": "ok", "version": .string(OutpostVersion.string), "schema_version": .int(schema),
                    "saturated": .array(load.saturated.map { .string($0) }),
                ])
            } catch {
                return Response.json(
                    ["status": "unavailable", "version": .string(OutpostVersion.string)], status: .serviceUnavailable)
            }
        }
        // Readiness: 503 while the database does not answer or the instance is saturated, so a load
        // balancer sends new requests elsewhere; `/health` stays the liveness check.
        router.get("/health/ready") { _, _ in
            let saturated = load.saturated
            let status: String
            do {
                _ = try await storage.health()
                status = saturated.isEmpty ? "ready" : "saturated"
            } catch {
                status = "unavailable"
            }
            let body: JSONValue = [
                "status": .string(status), "version": .string(OutpostVersion.string),
                "saturated": .array(saturated.map { .string($0) }),
            ]
            guard status == "ready" else {
                return Response.json(body, status: .serviceUnavailable, headers: [.retryAfter: "1"])
            }
            return Response.json(body)
        }
        router.get("/openapi.json") { _, _ in
            // Changes only with a new server version: a client may keep it for five minutes.
            Response.bytes(
                Data(OpenAPIDocument.json.utf8), contentType: "application/json", headers: [.cacheControl: "public, max-age=300"])
        }
    }
}

/// What an instance holds of its bounded resources, for `/health`: the names of those at their bound.
struct ServerLoad: Sendable {
    let listScans: ListScans
    let connections: ConnectionGate?
    let passwordChecks: PasswordChecks

    /// `list_scans` (every place taken and the queue at least half full), `connections` (at least
    /// nine tenths of the bound held), `password_checks` (every place taken); empty when none.
    var saturated: [String] {
        var names: [String] = []
        if listScans.status.saturated { names.append("list_scans") }
        if let connections, connections.count * 10 >= connections.limit * 9 { names.append("connections") }
        if passwordChecks.inFlight >= passwordChecks.capacity { names.append("password_checks") }
        return names
    }
}
