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

    /// The methods the route for `path` accepts; empty when no route matches it. Where several routes
    /// match, the router takes the most specific one (a literal segment wins over a parameter, from
    /// the left: `/records/{type}/changes` over `/records/{type}/{id}`), so only its methods count.
    func methods(for path: String) -> Set<HTTPRequest.Method> {
        let segments = path.split(separator: "/")
        var methods: Set<HTTPRequest.Method> = []
        var best: [Bool]?
        for entry in entries where Self.matches(entry, segments) {
            let literal = entry.segments.map { $0 != nil } + [!entry.matchesRest]
            if let current = best {
                if Self.isMoreSpecific(current, than: literal) { continue }
                if Self.isMoreSpecific(literal, than: current) { methods = [] }
            }
            best = literal
            methods.formUnion(entry.methods)
        }
        return methods
    }

    /// Whether a route whose segments are literal where `a` is true wins over one shaped like `b`:
    /// the first position where they differ is literal in `a`.
    static func isMoreSpecific(_ a: [Bool], than b: [Bool]) -> Bool {
        for (x, y) in zip(a, b) where x != y { return x }
        return a.count > b.count
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
