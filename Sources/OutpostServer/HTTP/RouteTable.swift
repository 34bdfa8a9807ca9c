import HTTPTypes

/// Which methods each route path accepts, read from the router once, so that a request for a path
/// that exists with another method is answered 405 with `Allow` instead of 404.
struct RouteTable: Sendable {
    struct Entry: Sendable {
        /// Path segments; `nil` matches any one segment (a parameter or `*`).
        var segments: [String?]
        /// `**`: the rest of the path, whatever it is.
        var matchesRest: Bool
        var methods: Set<HTTPRequest.Method>
    }

    private(set) var entries: [Entry] = []

    init(routes: [(path: String, method: HTTPRequest.Method)]) {
        var byPath: [String: Entry] = [:]
        var order: [String] = []
        for route in routes {
            if byPath[route.path] == nil {
                var segments: [String?] = []
                var matchesRest = false
                for segment in route.path.split(separator: "/") {
                    if segment == "**" {
                        matchesRest = true
                        break
                    }
                    let isParameter = segment == "*" || segment.hasPrefix(":") || segment.contains("{")
                    segments.append(isParameter ? nil : String(segment))
                }
                byPath[route.path] = Entry(segments: segments, matchesRest: matchesRest, methods: [])
                order.append(route.path)
            }
            byPath[route.path]?.methods.insert(route.method)
        }
        entries = order.compactMap { byPath[$0] }
    }

    /// The methods some route accepts for `path`; empty when no route matches it.
    func methods(for path: String) -> Set<HTTPRequest.Method> {
        let segments = path.split(separator: "/")
        var methods: Set<HTTPRequest.Method> = []
        for entry in entries where Self.matches(entry, segments) {
            methods.formUnion(entry.methods)
        }
        return methods
    }

    static func matches(_ entry: Entry, _ segments: [Substring]) -> Bool {
        if entry.matchesRest {
            guard segments.count >= entry.segments.count else { return false }
        } else {
            guard segments.count == entry.segments.count else { return false }
        }
        for (pattern, segment) in zip(entry.segments, segments) {
            if let pattern, pattern != segment { return false }
        }
        return true
    }

    /// The `Allow` field value: the methods in a stable order.
    static func allowValue(_ methods: Set<HTTPRequest.Method>) -> String {
        methods.map(\.rawValue).sorted().joined(separator: ", ")
    }
}
