import Foundation
import HTTPTypes

/// Pushes, pulls, patches and deletes ``Entity`` values, and lists resources, on one backend whose
/// shape an ``EntityConfiguration`` describes.
///
/// ```swift
/// let store = client.entities(.outpost)
/// var ada = try await store.push(Person(name: "Ada"))     // POST /records/people → id assigned
/// ada.email = nil
/// ada = try await store.patch(ada)                         // PATCH {"email": null}, If-Match
/// ada = try await store.pull(ada)                          // GET, If-None-Match
/// try await store.delete(ada)                              // DELETE, If-Match
/// ```
///
/// A store is a cheap value: make one wherever needed. It sends through the client's middlewares and
/// transport; when the configuration has an ``EntityConfiguration/errorFormat``, ``client`` is a
/// sibling of the given client that reads errors that way and shares its transport and middlewares.
public struct EntityStore: Sendable {
    /// The client that sends this store's requests.
    public let client: OutpostClient
    public let configuration: EntityConfiguration

    public init(client: OutpostClient, configuration: EntityConfiguration = .outpost) {
        self.configuration = configuration
        if let format = configuration.errorFormat {
            var clientConfiguration = client.configuration
            clientConfiguration.errorFormat = format
            self.client = OutpostClient(
                configuration: clientConfiguration, transport: client.transport, middlewares: client.middlewares)
        } else {
            self.client = client
        }
    }

    // MARK: Push

    /// Creates a new entity (`POST` to the collection, the server assigning the id), or, when it
    /// already has an id, replaces it unconditionally (`PUT`, no `If-Match`).
    ///
    /// - Returns: the entity as the server stored it, with its snapshot and ETag.
    public func push<E: Entity>(_ entity: E) async throws -> Synced<E> {
        try await push(Synced(entity))
    }

    /// Creates the entity when it has no id (`POST`), and replaces it otherwise (`PUT`, with
    /// `If-Match` when an ETag is known).
    ///
    /// - Throws: ``OutpostError`` with ``OutpostError/Code/conflict`` when the server's copy changed
    ///   since the ETag was read: pull, reapply the change, and push again.
    public func push<E: Entity>(_ entity: Synced<E>) async throws -> Synced<E> {
        if let id = entity.value.id {
            let path = configuration.itemPath(resource: E.resourcePath, id: id)
            let (json, transients) = try encodeKeepingTransients(entity.value, method: "PUT", path: path)
            var request = Request(method: .put, path: path, body: .json(wrap(json, for: E.self)))
            if let etag = entity.etag { request.headers[.ifMatch] = etag }
            let response = try await send(request, operation: "push", E.self, id: id)
            return try synced(E.self, from: response, request: request, local: entity.value, sent: json, transients: transients)
        }
        let path = configuration.collectionPath(resource: E.resourcePath)
        let (json, transients) = try encodeKeepingTransients(entity.value, method: "POST", path: path)
        let request = Request(method: .post, path: path, body: .json(wrap(json, for: E.self)))
        let response = try await send(request, operation: "push", E.self, id: nil as E.ID?)
        return try synced(E.self, from: response, request: request, local: entity.value, sent: json, transients: transients)
    }

    // MARK: Pull

    /// Fetches one entity by id (`GET`).
    public func pull<E: Entity>(_ type: E.Type, id: E.ID) async throws -> Synced<E> {
        let path = configuration.itemPath(resource: E.resourcePath, id: id)
        let request = Request.get(path)
        let response = try await send(request, operation: "pull", E.self, id: id)
        let value = try decodeEntity(E.self, from: response, request: request)
        return Synced(value, snapshot: try encode(value, method: "GET", path: path), etag: response.headerFields[.eTag])
    }

    /// Refreshes an entity from the server (`GET`, with `If-None-Match` when an ETag is known).
    ///
    /// When the server's copy changed, the result holds it and local changes are dropped. When it did
    /// not (`304 Not Modified`), `entity` comes back as it was, local changes included, still ready
    /// to patch.
    public func pull<E: Entity>(_ entity: Synced<E>) async throws -> Synced<E> {
        let id = try identity(of: entity.value, operation: "pull")
        let path = configuration.itemPath(resource: E.resourcePath, id: id)
        var request = Request.get(path)
        if let etag = entity.etag { request.headers[.ifNoneMatch] = etag }
        let response = try await send(request, operation: "pull", E.self, id: id)
        if response.status == 304 { return entity }
        let (_, transients) = try encodeKeepingTransients(entity.value, method: "GET", path: path)
        let value = try decodeEntity(E.self, from: response, request: request, transients: transients)
        return Synced(value, snapshot: try encode(value, method: "GET", path: path), etag: response.headerFields[.eTag])
    }

    // MARK: Patch

    /// The changes of `entity` since its last pull or push, as ``patch(_:)`` sends them: a JSON Merge
    /// Patch (RFC 7396; changed fields, fields that became `nil` as `null`, nested objects diffed,
    /// arrays whole), or with ``EntityConfiguration/PatchStyle/partialUpdate`` the changed top-level
    /// fields with their whole new values. An entity that was never synced gives all its fields.
    public func changes<E: Entity>(in entity: Synced<E>) throws -> JSONValue {
        let path = entity.value.id.map { configuration.itemPath(resource: E.resourcePath, id: $0) } ?? E.resourcePath
        let current = try encode(entity.value, method: "PATCH", path: path)
        return changes(from: entity.snapshot ?? .object([:]), to: current)
    }

    /// The patch body for the configured style.
    func changes(from snapshot: JSONValue, to current: JSONValue) -> JSONValue {
        guard configuration.patchStyle == .partialUpdate else { return MergePatch.diff(from: snapshot, to: current) }
        guard case .object(let old) = snapshot, case .object(let new) = current else { return current }
        var changed: [String: JSONValue] = [:]
        for key in old.keys where new[key] == nil { changed[key] = .null }
        for (key, value) in new where old[key] != value {
            if old[key] == nil, value == .null { continue }  // absent and null read the same
            changed[key] = value
        }
        return .object(changed)
    }

    /// Sends the changes made since the last pull or push: a `PATCH` with a merge patch of the changed
    /// fields (``EntityConfiguration/PatchStyle/mergePatch``), a `PATCH` with the changed top-level
    /// fields as `application/json` (``EntityConfiguration/PatchStyle/partialUpdate``), or a `PUT` of the whole entity
    /// (``EntityConfiguration/PatchStyle/putWholeObject``); with `If-Match` when an ETag is known.
    /// Nothing is sent when nothing changed. ``changes(in:)`` shows the patch beforehand.
    ///
    /// - Throws: ``OutpostError`` with ``OutpostError/Code/missingIdentity`` when the entity has no id
    ///   (push it instead), ``OutpostError/Code/conflict`` when the server's copy changed since it was
    ///   read.
    public func patch<E: Entity>(_ entity: Synced<E>) async throws -> Synced<E> {
        let id = try identity(of: entity.value, operation: "patch")
        if configuration.patchStyle == .putWholeObject { return try await push(entity) }
        let path = configuration.itemPath(resource: E.resourcePath, id: id)
        let (current, transients) = try encodeKeepingTransients(entity.value, method: "PATCH", path: path)
        let patch = changes(from: entity.snapshot ?? .object([:]), to: current)
        if MergePatch.isEmpty(patch) {
            var unchanged = entity
            unchanged.snapshot = current
            return unchanged
        }
        let request = patchRequest(patch, for: E.self, path: path, etag: entity.etag)
        let response = try await send(request, operation: "patch", E.self, id: id)
        return try synced(E.self, from: response, request: request, local: entity.value, sent: current, transients: transients)
    }

    // MARK: Delete

    /// Deletes an entity (`DELETE`, with `If-Match` when an ETag is known).
    ///
    /// - Throws: ``OutpostError/Code/missingIdentity`` when it has no id, ``OutpostError/Code/conflict``
    ///   when the server's copy changed since it was read.
    public func delete<E: Entity>(_ entity: Synced<E>) async throws {
        let id = try identity(of: entity.value, operation: "delete")
        try await delete(E.self, id: id, ifMatch: entity.etag)
    }

    /// Deletes an entity by id (`DELETE`), only if its ETag still is `etag` when one is given.
    public func delete<E: Entity>(_ type: E.Type, id: E.ID, ifMatch etag: String? = nil) async throws {
        var request = Request.delete(configuration.itemPath(resource: E.resourcePath, id: id))
        if let etag { request.headers[.ifMatch] = etag }
        _ = try await send(request, operation: "delete", E.self, id: id)
    }
}

extension OutpostClient {
    /// A store for entities and lists on this client's backend, shaped as `configuration` says.
    public func entities(_ configuration: EntityConfiguration = .outpost) -> EntityStore {
        EntityStore(client: self, configuration: configuration)
    }
}

// MARK: - Internals

extension CodingUserInfoKey {
    /// Carries the envelope key to ``Enveloped``.
    static let outpostEnvelopeKey = CodingUserInfoKey(rawValue: "outpost.envelopeKey")!
}

/// `{"<key>": value}`, the key coming from the decoder's user info.
struct Enveloped<Value: Decodable>: Decodable {
    var value: Value

    init(from decoder: any Decoder) throws {
        guard let key = decoder.userInfo[.outpostEnvelopeKey] as? String else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "No envelope key was configured."))
        }
        let container = try decoder.container(keyedBy: AnyCodingKey.self)
        value = try container.decode(Value.self, forKey: container.resolve(key))
    }
}

/// A coding key made from any string.
struct AnyCodingKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ string: String) { stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { return nil }
}

extension KeyedDecodingContainer where Key == AnyCodingKey {
    /// The key as written, or as `convertFromSnakeCase` turns it (`next_cursor` → `nextCursor`) when
    /// only that is present.
    func resolve(_ name: String) -> AnyCodingKey {
        let key = AnyCodingKey(name)
        if contains(key) { return key }
        guard let camel = AnyCodingKey.camelCased(name).map({ AnyCodingKey($0) }) else { return key }
        return contains(camel) ? camel : key
    }
}

extension AnyCodingKey {
    /// `next_cursor` → `nextCursor`; `nil` for a name without `_`.
    static func camelCased(_ name: String) -> String? {
        guard name.contains("_") else { return nil }
        let parts = name.split(separator: "_", omittingEmptySubsequences: true)
        guard let first = parts.first else { return nil }
        return String(first) + parts.dropFirst().map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
    }
}

extension EntityStore {
    func send<E: Entity>(_ request: Request, operation: String, _ type: E.Type, id: E.ID?) async throws -> ClientResponse {
        do {
            return try await client.send(request, operationName: "\(operation) \(E.self)")
        } catch var error as OutpostError where error.code == .conflict {
            let name = id.map { "\(E.self) \($0.pathSegment)" } ?? "\(E.self)"
            error.message = "\(name) changed on the server since it was last pulled (412 Precondition Failed)"
            error.suggestion = "Pull it again, reapply your change, and retry"
            throw error
        }
    }

    func identity<E: Entity>(of value: E, operation: String) throws -> E.ID {
        guard let id = value.id else {
            throw OutpostError(
                .missingIdentity, "Cannot \(operation) a \(E.self) that has no id",
                suggestion: "Push it first; the server assigns the id", path: E.resourcePath)
        }
        return id
    }

    func encode<E: Entity>(_ value: E, method: String, path: String) throws -> JSONValue {
        do {
            return try JSONValue(encoding: value, encoder: client.configuration.encoder)
        } catch {
            throw OutpostError(
                .encodingFailed, "The \(E.self) could not be encoded: \(error)",
                suggestion: "Check the type's Encodable conformance (non-finite numbers cannot be JSON)",
                method: method, path: path, underlying: error)
        }
    }

    func wrap<E: Entity>(_ json: JSONValue, for type: E.Type) -> JSONValue {
        guard let key = configuration.envelopeKey(for: E.self) else { return json }
        return .object([key: json])
    }

    /// The synced entity after a push or patch: the server's copy when it sent one, otherwise the
    /// local value with an id from `Location` if it was new.
    func synced<E: Entity>(
        _ type: E.Type, from response: ClientResponse, request: Request, local: E, sent: JSONValue,
        transients: [String: any Sendable]
    ) throws -> Synced<E> {
        let etag = response.headerFields[.eTag]
        guard response.body.contains(where: { !$0.isWhitespaceByte }) else {
            var value = local
            if value.id == nil, let location = response.headerFields[.location],
                let id = Self.identifier(E.ID.self, fromLocation: location)
            {
                value.id = id
            }
            let path = request.path
            return Synced(
                value, snapshot: value.id == local.id ? sent : try encode(value, method: request.method.rawValue, path: path),
                etag: etag)
        }
        var value = try decodeEntity(E.self, from: response, request: request, transients: transients)
        if value.id == nil { value.id = local.id }
        return Synced(value, snapshot: try encode(value, method: request.method.rawValue, path: request.path), etag: etag)
    }

    /// Decodes the server's copy of an entity; `transients` (from ``encodeKeepingTransients(_:method:path:)``)
    /// become the values of its ``Transient`` properties.
    func decodeEntity<E: Entity>(
        _ type: E.Type, from response: ClientResponse, request: Request, transients: [String: any Sendable] = [:]
    ) throws -> E {
        let method = request.method.rawValue
        let key = configuration.envelopeKey(for: E.self)
        let kept = transients.isEmpty ? nil : TransientValues(values: transients, droppedComponents: key == nil ? 0 : 1)
        return try TransientValues.$restoring.withValue(kept) {
            guard let key else {
                return try client.decode(E.self, from: response, method: method, path: request.path)
            }
            let decoder = client.configuration.decoder.copy(adding: [.outpostEnvelopeKey: key])
            return try Self.decode(Enveloped<E>.self, from: response, decoder: decoder, method: method, path: request.path).value
        }
    }

    /// Encodes a local entity as ``encode(_:method:path:)`` does, and records its transient values.
    func encodeKeepingTransients<E: Entity>(_ value: E, method: String, path: String) throws -> (
        JSONValue, [String: any Sendable]
    ) {
        let recorder = TransientValues.Recorder()
        let json = try TransientValues.$recorder.withValue(recorder) { try encode(value, method: method, path: path) }
        return (json, recorder.recorded)
    }

    /// Decodes with `decoder`, reporting failures as the client does.
    static func decode<T: Decodable>(
        _ type: T.Type, from response: ClientResponse, decoder: JSONDecoder, method: String, path: String
    ) throws -> T {
        try OutpostClient.decode(type, from: response, decoder: decoder, method: method, path: path)
    }

    static func identifier<ID: EntityIdentifier>(_ type: ID.Type, fromLocation location: String) -> ID? {
        let path = location.split(separator: "?", maxSplits: 1).first.map(String.init) ?? location
        guard let last = path.split(separator: "/").last else { return nil }
        return ID(pathSegment: String(last).removingPercentEncoding ?? String(last))
    }
}

extension JSONDecoder {
    /// A decoder with the same strategies and extra user info (a `JSONDecoder` is a shared reference,
    /// so its user info is not changed in place).
    func copy(adding userInfo: [CodingUserInfoKey: any Sendable]) -> JSONDecoder {
        let copy = JSONDecoder()
        copy.dateDecodingStrategy = dateDecodingStrategy
        copy.dataDecodingStrategy = dataDecodingStrategy
        copy.nonConformingFloatDecodingStrategy = nonConformingFloatDecodingStrategy
        copy.keyDecodingStrategy = keyDecodingStrategy
        copy.allowsJSON5 = allowsJSON5
        copy.assumesTopLevelDictionary = assumesTopLevelDictionary
        var info = self.userInfo
        for (key, value) in userInfo { info[key] = value }
        copy.userInfo = info
        return copy
    }
}
