/// The OpenAPI 3.1 description of every route, served at `GET /openapi.json`.
///
/// A test compares it with the router's routes: a route missing here fails the build.
enum OpenAPIDocument {
    static let json = #"""
    {
      "openapi": "3.1.0",
      "info": {
        "title": "Outpost reference server",
        "version": "0.1.0",
        "description": "JSON over HTTP. Every failure is {\"error\": {\"code\", \"message\", \"details\"}} with a proper status. See docs/PROTOCOL.md."
      },
      "paths": {
        "/health": {
          "get": {
            "summary": "Liveness and database check",
            "responses": {
              "200": {"description": "Healthy", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Health"}}}},
              "503": {"description": "The database does not answer"}
            }
          }
        },
        "/openapi.json": {
          "get": {
            "summary": "This document",
            "responses": {"200": {"description": "The OpenAPI document"}}
          }
        },
        "/lambdas/{name}": {
          "post": {
            "summary": "Call a remote function",
            "parameters": [{"name": "name", "in": "path", "required": true, "schema": {"type": "string", "pattern": "^[A-Za-z0-9_.:-]{1,128}$"}}],
            "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/LambdaCall"}}}},
            "responses": {
              "200": {"description": "The result", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/LambdaResult"}}}},
              "400": {"$ref": "#/components/responses/Error"},
              "404": {"$ref": "#/components/responses/Error"},
              "413": {"$ref": "#/components/responses/Error"},
              "500": {"$ref": "#/components/responses/Error"},
              "504": {"$ref": "#/components/responses/Error"}
            }
          }
        },
        "/handlers/{name}": {
          "post": {
            "summary": "Call a custom handler: any JSON in and out",
            "parameters": [{"name": "name", "in": "path", "required": true, "schema": {"type": "string"}}],
            "requestBody": {"content": {"application/json": {"schema": {}}}},
            "responses": {
              "200": {"description": "Whatever the handler answers", "content": {"application/json": {"schema": {}}}},
              "400": {"$ref": "#/components/responses/Error"},
              "404": {"$ref": "#/components/responses/Error"},
              "500": {"$ref": "#/components/responses/Error"},
              "504": {"$ref": "#/components/responses/Error"}
            }
          }
        },
        "/records/{type}": {
          "parameters": [{"name": "type", "in": "path", "required": true, "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"}}],
          "post": {
            "summary": "Create a record; the server assigns its id",
            "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object"}}}},
            "responses": {
              "201": {"description": "Created", "headers": {"ETag": {"schema": {"type": "string"}}, "Location": {"schema": {"type": "string"}}}, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Record"}}}},
              "400": {"$ref": "#/components/responses/Error"},
              "413": {"$ref": "#/components/responses/Error"}
            }
          },
          "get": {
            "summary": "List records: keyset cursor (limit, cursor) or page numbers (page, per_page); sort; equality filters on fields",
            "parameters": [
              {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20}},
              {"name": "cursor", "in": "query", "schema": {"type": "string"}},
              {"name": "page", "in": "query", "schema": {"type": "integer", "minimum": 1}},
              {"name": "per_page", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 100}},
              {"name": "sort", "in": "query", "schema": {"type": "string", "enum": ["created", "-created", "updated", "-updated"]}}
            ],
            "responses": {
              "200": {"description": "One page", "content": {"application/json": {"schema": {"oneOf": [{"$ref": "#/components/schemas/CursorPage"}, {"$ref": "#/components/schemas/NumberedPage"}]}}}},
              "400": {"$ref": "#/components/responses/Error"}
            }
          }
        },
        "/records/{type}/{id}": {
          "parameters": [
            {"name": "type", "in": "path", "required": true, "schema": {"type": "string"}},
            {"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}
          ],
          "get": {
            "summary": "Read a record; If-None-Match gives 304",
            "responses": {
              "200": {"description": "The record", "headers": {"ETag": {"schema": {"type": "string"}}}, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Record"}}}},
              "304": {"description": "Not modified"},
              "404": {"$ref": "#/components/responses/Error"}
            }
          },
          "put": {
            "summary": "Replace a record's fields; If-Match gives 412 on a mismatch",
            "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object"}}}},
            "responses": {
              "200": {"description": "The record", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Record"}}}},
              "404": {"$ref": "#/components/responses/Error"},
              "412": {"$ref": "#/components/responses/Error"}
            }
          },
          "patch": {
            "summary": "Apply a JSON Merge Patch (RFC 7396); If-Match gives 412 on a mismatch",
            "requestBody": {"required": true, "content": {"application/merge-patch+json": {"schema": {"type": "object"}}}},
            "responses": {
              "200": {"description": "The record", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Record"}}}},
              "400": {"$ref": "#/components/responses/Error"},
              "404": {"$ref": "#/components/responses/Error"},
              "412": {"$ref": "#/components/responses/Error"},
              "415": {"$ref": "#/components/responses/Error"}
            }
          },
          "delete": {
            "summary": "Delete a record; If-Match gives 412 on a mismatch",
            "responses": {
              "204": {"description": "Deleted"},
              "404": {"$ref": "#/components/responses/Error"},
              "412": {"$ref": "#/components/responses/Error"}
            }
          }
        }
      },
      "components": {
        "responses": {
          "Error": {"description": "A failure", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
        },
        "schemas": {
          "Error": {
            "type": "object",
            "required": ["error"],
            "properties": {
              "error": {
                "type": "object",
                "required": ["code", "message"],
                "properties": {"code": {"type": "string"}, "message": {"type": "string"}, "details": {}}
              }
            }
          },
          "Health": {
            "type": "object",
            "properties": {"status": {"type": "string"}, "version": {"type": "string"}, "schema_version": {"type": "integer"}}
          },
          "Record": {
            "type": "object",
            "description": "The client's fields plus the server-owned id, created_at and updated_at (ISO 8601, UTC, whole seconds)",
            "required": ["id", "created_at", "updated_at"],
            "properties": {"id": {"type": "string"}, "created_at": {"type": "string", "format": "date-time"}, "updated_at": {"type": "string", "format": "date-time"}},
            "additionalProperties": true
          },
          "CursorPage": {
            "type": "object",
            "properties": {
              "results": {"type": "array", "items": {"$ref": "#/components/schemas/Record"}},
              "next_cursor": {"type": ["string", "null"]}, "prev_cursor": {"type": ["string", "null"]},
              "next": {"type": ["string", "null"]}, "previous": {"type": ["string", "null"]}
            }
          },
          "NumberedPage": {
            "type": "object",
            "properties": {
              "results": {"type": "array", "items": {"$ref": "#/components/schemas/Record"}},
              "page": {"type": "integer"}, "per_page": {"type": "integer"}, "total": {"type": "integer"}, "total_pages": {"type": "integer"}
            }
          },
          "LambdaCall": {
            "type": "object",
            "properties": {"args": {"oneOf": [{"type": "array"}, {"type": "object"}]}}
          },
          "LambdaResult": {
            "type": "object",
            "required": ["result"],
            "properties": {"result": {}}
          }
        }
      }
    }
    """#
}
