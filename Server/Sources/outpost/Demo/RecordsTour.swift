import Foundation
import HTTPTypes
import Outpost

/// A blog post with a nested author entity and a property that stays on the device.
struct BlogPost: Entity {
    static let resourcePath = "records/posts"
    var id: String?
    var title: String
    var body: String
    var tags: [String]
    var author: Author
    @Transient var isExpandedInUI: Bool

    init(title: String, body: String, tags: [String], author: Author) {
        self.title = title
        self.body = body
        self.tags = tags
        self.author = author
        self.isExpandedInUI = false
    }
}

struct Author: Entity {
    static let resourcePath = "records/authors"
    var id: String?
    var name: String
}

/// What a list screen needs: fewer fields than the entity (the list's item type).
struct BlogPostPreview: Decodable, Sendable {
    var id: String
    var title: String

    /// The stored `title`, for typed filters and sorts.
    static let titleField = RecordField(\BlogPostPreview.title, "title")
}

/// Entities pushed, pulled, patched and deleted; lists in both pagination styles.
enum RecordsTour {
    static func run(client: OutpostClient, log: TourLog) async throws {
        let store = client.entities(.outpost)
        log.section("Entities")
        let author = try await store.push(Author(name: "Grace"))
        log.step("push(Author(name: \"Grace\")) → POST /records/authors, id \(author.id ?? "?"), ETag \(author.etag ?? "-")")
        var post = try await store.push(
            BlogPost(title: "Hello", body: "First post", tags: ["intro"], author: author.value))
        log.step("push(BlogPost(..., author: grace)) with the author nested → id \(post.id ?? "?")")
        for index in 2...7 {
            _ = try await store.push(BlogPost(title: "Post \(index)", body: "…", tags: [], author: author.value))
        }
        log.detail("and 6 more posts")

        post.title = "Hello, world"
        post.tags = []
        post.isExpandedInUI = true
        let patch = try store.changes(in: post)
        log.step("Change the title and clear the tags; isExpandedInUI is @Transient and never sent")
        log.detail("merge patch sent: \(patch.jsonString())")
        post = try await store.patch(post)
        log.detail("PATCH with If-Match → ETag now \(post.etag ?? "-")")

        var stale = post
        stale.body = "A stale edit"
        post.body = "Edited elsewhere first"
        post = try await store.patch(post)
        do {
            _ = try await store.patch(stale)
        } catch let error as OutpostError where error.code == .conflict {
            log.step("A patch from a stale copy is refused, not applied:")
            log.detail("\(error.code): \(error.message)")
        }

        log.section("Lists")
        let cursorList = ListRequest(resourcePath: "records/posts", of: BlogPostPreview.self, pageSize: 3)
        var pageNumber = 0
        for try await page in store.pages(cursorList) {
            pageNumber += 1
            log.step(
                "cursor page \(pageNumber): \(page.items.map(\.title).joined(separator: ", "))\(page.info.hasNextPage ? "  (next_cursor given)" : "  (last page)")"
            )
        }
        let numbered = try await store.page(
            ListRequest(
                resourcePath: "records/posts", of: BlogPostPreview.self, pageSize: 3, pagination: .outpostPageNumbers, page: 2))
        log.step(
            "page-number style, page \(numbered.info.currentPage ?? 0) of \(numbered.info.numberOfPages ?? 0) (\(numbered.info.totalItems ?? 0) posts): "
                + numbered.items.map(\.title).joined(separator: ", "))
        var firstFour: [String] = []
        for try await preview in store.items(cursorList, limit: 4) { firstFour.append(preview.title) }
        log.step("items(limit: 4) fetches lazily and stops early: \(firstFour.joined(separator: ", "))")
        let selected = cursorList.filter(#"record.title ^= "Post" && record.title != "Post 4""#).sorted(by: "-title")
        var titles: [String] = []
        for try await preview in store.items(selected) { titles.append(preview.title) }
        log.step(#"filter record.title ^= "Post" && record.title != "Post 4", sort -title: "# + titles.joined(separator: ", "))
        let title = BlogPostPreview.titleField
        let typed = cursorList.filter(title.hasPrefix("Post") && title != "Post 4").sorted(by: title.descending)
        var typedTitles: [String] = []
        for try await preview in store.items(typed) { typedTitles.append(preview.title) }
        log.step(
            "the same, typed: filter(title.hasPrefix(\"Post\") && title != \"Post 4\"), sorted(by: title.descending): "
                + typedTitles.joined(separator: ", "))

        log.section("Record hooks (the demo plugin's before hook on notes)")
        let note = try await client.send(.post("/records/notes", json: ["text": "Hooks run next to the data"]))
        log.step(#"POST /records/notes {"text": "Hooks run next to the data"}"#)
        log.detail("201; the hook set words = \(try note.json()["words"]?.intValue ?? 0)")
        do {
            _ = try await client.send(.post("/records/notes", json: ["text": "  "]))
            log.step("POST /records/notes with blank text: stored (the hook did not run)")
        } catch let error as OutpostError {
            log.step(#"POST /records/notes {"text": "  "}: the hook refuses it"#)
            log.detail("HTTP \(error.status ?? 0) [\(error.serverCode ?? "-")]: \(error.serverMessage ?? error.message)")
        }

        log.section("Idempotent writes")
        let marker = UUID().uuidString
        let order = Request.post("/records/orders", json: ["item": "tea", "order": .string(marker)]).idempotencyKey()
        let sent = try await client.send(order)
        // As if the first reply were lost: the SDK sends the same request, with the same key, again.
        let retried = try await client.send(order)
        let replayed = retried.headerFields[HTTPField.Name("Idempotency-Replayed")!] ?? "-"
        let total = try await client.send(.get("/records/orders?page=1&per_page=1&order=\(marker)")).json()["total"]
        log.step("POST /records/orders with an Idempotency-Key, then the same POST again (a retry after a lost reply)")
        log.detail(
            "ids \(try sent.json()["id"]?.stringValue ?? "?") and \(try retried.json()["id"]?.stringValue ?? "?"), "
                + "Idempotency-Replayed: \(replayed); records created: \(total?.intValue ?? 0)")

        log.section("Delete")
        try await store.delete(post)
        do {
            _ = try await store.pull(post)
        } catch let error as OutpostError {
            log.step("delete(post) → 204; pulling it again: HTTP \(error.status ?? 0) [\(error.serverCode ?? "-")]")
        }
    }
}
