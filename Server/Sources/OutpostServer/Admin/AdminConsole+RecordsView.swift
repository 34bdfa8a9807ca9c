import Foundation
import HTTPTypes
import Hummingbird
@_spi(OutpostInternal) import OutpostCore

/// `GET /admin/records/{type}/{id}`: one record, its fields as JSON, the form that replaces
/// them and the one that deletes the record.
extension AdminConsole {
    /// What the record page shows besides the record: a form's error and the text the admin sent.
    struct RecordPageState: Sendable {
        var text: String?
        var error: String?
        var status: HTTPResponse.Status = .ok
    }

    func recordPage(_ visit: AdminVisit, type: String, id: String, state: RecordPageState = .init()) async throws
        -> Response
    {
        let list = Self.typePath(type) + "/list"
        guard let record = try await storage.record(type: type, id: id) else {
            let body =
                "<p>No record \(HTMLPage.escape(type))/\(HTMLPage.escape(id)); it may have been deleted.</p>\n<p>"
                + AdminHTML.link(list, "Records of \(type)", id: "records-link") + "</p>"
            return page(
                visit, title: "Record not found", section: .records, body: body, status: .notFound, error: state.error)
        }
        let pretty = Self.prettyJSON(.object(try record.fields))
        let path = Self.recordPath(type, id)
        let version = "<input type=\"hidden\" name=\"version\" value=\"\(record.version)\">\n"
        let edit =
            version
            + AdminHTML.textArea(
                id: "record-json", label: "Fields as JSON", name: "json", value: state.text ?? pretty,
                maxLength: records.maxBodyBytes,
                hint: "A JSON object that replaces every field, as PUT does (id, created_at and updated_at are the "
                    + "server's and are ignored). It is saved only if nobody changed the record since version \(record.version).")
        let delete =
            version + """
                <p><input type="checkbox" id="record-delete-confirm" name="confirm" value="yes">
                <label for="record-delete-confirm" style="display: inline">I understand that the record is deleted for good</label></p>
                """
        let facts = AdminHTML.definitions(
            id: "record",
            [
                ("Type", HTMLPage.escape(record.type)), ("Id", AdminHTML.code(record.id)),
                ("Owner", HTMLPage.escape(record.owner ?? "none")), ("Visibility", record.isPrivate ? "private" : "public"),
                ("Version", "\(record.version)"), ("ETag", AdminHTML.code(record.etag)),
                ("Created", AdminHTML.time(record.createdAt)), ("Updated", AdminHTML.time(record.updatedAt)),
            ])
        let body = """
            \(facts)
            <h2 id="fields-heading">Fields</h2>
            <pre id="fields">\(HTMLPage.escape(pretty))</pre>
            <h2 id="edit-heading">Edit</h2>
            \(form(visit, name: Self.recordUpdateForm, action: path + "/edit", body: edit, submit: "Save record", id: "save-record"))
            <h2 id="delete-heading">Delete</h2>
            \(form(visit, name: Self.recordDeleteForm, action: path + "/delete", body: delete, submit: "Delete record", id: "delete-record", danger: true))
            <p>\(AdminHTML.link(list, "Records of \(type)", id: "records-link"))</p>
            """
        return page(
            visit, title: "Record \(type)/\(id)", section: .records, body: body, status: state.status, error: state.error)
    }

    /// The `version` field of an edit or delete form.
    static func formVersion(_ form: [String: String]) throws -> Int {
        guard let text = form["version"], text.utf8.count <= 18, let version = Int(text), version >= 1 else {
            throw ServerError.badRequest("invalid_version", "The form lost the record's version; open the record again")
        }
        return version
    }

    /// The failures a record form shows on the record's page.
    static let shownStatuses: [HTTPResponse.Status] = [.badRequest, .notFound, .conflict, .unprocessableContent]

    /// `POST /admin/records/{type}/{id}/edit`.
    func postRecordEdit(_ visit: AdminVisit, _ form: [String: String]) async throws -> Response {
        let (type, id) = try RecordRoutes.typeAndID(visit.context)
        let text = form["json", default: ""]
        do {
            let version = try Self.formVersion(form)
            let saved = try await replaceRecord(
                type: type, id: id, version: version, text: text, admin: visit.admin, logger: visit.context.logger)
            await record(
                AuditAction.recordUpdated, visit, subject: "\(type)/\(id)",
                detail: ["version": "\(saved.version)", "owner": saved.owner ?? ""])
            return seeOther(Self.recordPath(type, id), notice: "Record \(type)/\(id) is saved (version \(saved.version)).")
        } catch let error as ServerError where Self.shownStatuses.contains(error.status) {
            // The admin's text stays in the form; the page shows the record as it is now.
            return try await recordPage(
                visit, type: type, id: id,
                state: RecordPageState(
                    text: String(text.prefix(records.maxBodyBytes)), error: error.message, status: error.status))
        }
    }

    /// `POST /admin/records/{type}/{id}/delete`: only with "I understand" ticked.
    func postRecordDelete(_ visit: AdminVisit, _ form: [String: String]) async throws -> Response {
        let (type, id) = try RecordRoutes.typeAndID(visit.context)
        do {
            guard form["confirm"] == "yes" else {
                throw ServerError.badRequest(
                    "confirmation_required", "Tick \"I understand\" to delete the record; nothing was deleted")
            }
            let version = try Self.formVersion(form)
            let deleted = try await deleteRecord(
                type: type, id: id, version: version, admin: visit.admin, logger: visit.context.logger)
            await record(
                AuditAction.recordDeleted, visit, subject: "\(type)/\(id)",
                detail: ["version": "\(version)", "owner": deleted.owner ?? ""])
            return seeOther(Self.typePath(type) + "/list", notice: "Record \(type)/\(id) is deleted.")
        } catch let error as ServerError where Self.shownStatuses.contains(error.status) {
            return try await recordPage(
                visit, type: type, id: id, state: RecordPageState(error: error.message, status: error.status))
        }
    }
}
