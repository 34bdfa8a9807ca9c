import HTTPTypes
import OutpostTestSupport
import Testing

@testable import OutpostServer

@Suite("Allowed methods per path", .closesWhatItOpens)
struct RouteTableTests {
    let table = RouteTable(routes: [
        ("/health", .get), ("/health", .head), ("/records/{type}", .get), ("/records/{type}", .post),
        ("/records/{type}/{id}", .get), ("/records/{type}/{id}", .delete), ("/lambdas/:name", .post), ("/files/**", .get),
        ("/users", .post),
    ])

    @Test("literal, parameter and catch-all segments match; others do not")
    func matching() {
        #expect(table.methods(for: "/health") == [.get, .head])
        #expect(table.methods(for: "/records/people") == [.get, .post])
        #expect(table.methods(for: "/records/people/r1") == [.get, .delete])
        #expect(table.methods(for: "/lambdas/hello:someone") == [.post])
        #expect(table.methods(for: "/files/a/b/c") == [.get])
        #expect(table.methods(for: "/records/people/r1/extra").isEmpty)
        #expect(table.methods(for: "/nothing").isEmpty)
        #expect(table.methods(for: "/").isEmpty)
    }

    @Test("the most specific route's methods count: a literal segment wins over a parameter")
    func specificity() {
        let table = RouteTable(routes: [
            ("/records/{type}/{id}", .get), ("/records/{type}/{id}", .put), ("/records/{type}/{id}", .delete),
            ("/records/{type}/changes", .get), ("/records/{type}/changes", .head), ("/a/**", .post), ("/a/b", .get),
        ])
        #expect(table.methods(for: "/records/notes/changes") == [.get, .head])
        #expect(table.methods(for: "/records/notes/r1") == [.get, .put, .delete])
        #expect(table.methods(for: "/a/b") == [.get])
        #expect(table.methods(for: "/a/c") == [.post])
    }

    @Test("Allow lists the methods in a stable order")
    func allow() {
        #expect(RouteTable.allowValue([.post, .get, .head]) == "GET, HEAD, POST")
    }
}
