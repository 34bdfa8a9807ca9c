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
