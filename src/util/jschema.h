/* jschema: a small JSON Schema validator (draft-07 / 2020-12 subset) for tests and checks of
 * what we produce: the profile (api/schemas/profile.schema.json), host.json, API responses.
 *
 * Supported keywords
 *   any:     type (a name or an array of names; "integer" also accepts 3.0), enum, const,
 *            allOf, anyOf, oneOf, not, $ref (local only: "#", "#/definitions/x", "#/$defs/x",
 *            any "#/json/pointer"; siblings of $ref are applied too), true/false schemas,
 *            "nullable": true (OpenAPI 3.0: null is accepted).
 *   numbers: minimum, maximum, exclusiveMinimum, exclusiveMaximum (number form, or the draft-04
 *            boolean form), multipleOf.
 *   strings: minLength, maxLength (in code points), pattern (POSIX extended regex, unanchored
 *            search as in JSON Schema: use ^...$ to anchor; ECMA-only syntax such as \d is
 *            not understood).
 *   arrays:  items (one schema, or an array of schemas by position), minItems, maxItems,
 *            uniqueItems.
 *   objects: properties, required, additionalProperties (bool or schema), minProperties,
 *            maxProperties.
 * Annotations ($schema, $id, title, description, default, examples, format, $comment,
 * definitions, $defs, readOnly, writeOnly, deprecated, ...) and unknown keywords are ignored.
 * Keywords that would constrain but are not implemented (patternProperties, dependencies,
 * dependentRequired, dependentSchemas, if/then/else, propertyNames, contains, additionalItems,
 * prefixItems, unevaluated*, $dynamicRef, $recursiveRef) make validation fail with -ENOTSUP,
 * never pass silently.
 *
 * Nothing is logged; schema and doc are borrowed and not modified. */
#ifndef FT_UTIL_JSCHEMA_H
#define FT_UTIL_JSCHEMA_H
#include <jansson.h>
#include <stddef.h>

/* Validate doc against schema. Returns 0 when valid; -EINVAL when doc does not conform, with
 * err (may be NULL) set to one line naming the JSON path that failed and why, e.g.
 * "$.gpu.pcie_link.gen_current: expected integer, got string"; -ENOTSUP when the schema itself
 * is malformed or uses an unsupported keyword, or a $ref does not resolve (err starts with
 * "schema"). For anyOf/oneOf failures err names the deepest failure among the branches. */
int ftjschema_validate(const json_t *schema, const json_t *doc, char *err, size_t errlen);

/* Convenience: load a schema file and a document file and validate. Returns as above, or
 * -errno (-ENOENT, -EINVAL for a parse error, ...) when a file cannot be read or parsed; err says
 * which file. */
int ftjschema_validate_files(const char *schema_path, const char *doc_path, char *err, size_t errlen);
#endif
