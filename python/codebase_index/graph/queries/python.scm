; Capture protocol (see graph/extract.py):
;   @def.<kind> + @name (+ @owner, @bases)   a definition
;   @scope.<kind> + @name                    a container that qualifies names but is not a symbol
;   @ref.<kind> + @name (+ @receiver)        a call site
;   @import                                  an import statement (decoded by graph/imports.py)
;   @local / @field + @local.name + @local.type   a variable whose type is visible in the source

(class_definition name: (identifier) @name superclasses: (argument_list)? @bases) @def.class
(function_definition name: (identifier) @name) @def.function

(call function: (identifier) @name) @ref.call
(call function: (attribute object: (_) @receiver attribute: (identifier) @name)) @ref.method_call

(import_statement) @import
(import_from_statement) @import

(assignment left: (identifier) @local.name right: (call function: [(identifier) (attribute)] @local.type)) @local
(assignment left: (identifier) @local.name type: (type [(identifier) (attribute)] @local.type)) @local
(assignment
  left: (attribute object: (identifier) attribute: (identifier)) @local.name
  right: (call function: [(identifier) (attribute)] @local.type)) @local
(typed_parameter (identifier) @local.name type: (type [(identifier) (attribute)] @local.type)) @local
(typed_default_parameter name: (identifier) @local.name type: (type [(identifier) (attribute)] @local.type)) @local
(with_item
  value: (as_pattern
    (call function: [(identifier) (attribute)] @local.type)
    alias: (as_pattern_target (identifier) @local.name))) @local
(assignment
  left: (identifier) @local.name
  right: [
    (dictionary) (list) (set) (string) (concatenated_string)
    (list_comprehension) (dictionary_comprehension) (set_comprehension)
  ] @local.literal) @local
