; Shared by JavaScript, TypeScript and TSX (capture protocol: see python.scm).

(function_declaration name: (identifier) @name) @def.function
(generator_function_declaration name: (identifier) @name) @def.function
(class_declaration name: (_) @name) @def.class
(method_definition name: [(property_identifier) (private_property_identifier)] @name) @def.method
(variable_declarator
  name: (identifier) @name
  value: [(arrow_function) (function_expression) (generator_function)]) @def.function
(assignment_expression
  left: (member_expression
    object: (member_expression object: (identifier) @owner property: (property_identifier) @_proto)
    property: (property_identifier) @name)
  right: [(function_expression) (arrow_function)]
  (#eq? @_proto "prototype")) @def.method
(assignment_expression
  left: (member_expression object: (identifier) @owner property: (property_identifier) @name)
  right: [(function_expression) (arrow_function)]) @def.function
(pair key: (property_identifier) @name value: [(function_expression) (arrow_function)]) @def.function

(call_expression function: (identifier) @name) @ref.call
(call_expression
  function: (member_expression
    object: (_) @receiver
    property: [(property_identifier) (private_property_identifier)] @name)) @ref.method_call
(new_expression constructor: (identifier) @name) @ref.constructor
(new_expression constructor: (member_expression object: (_) @receiver property: (property_identifier) @name)) @ref.constructor

(import_statement) @import
(export_statement) @import
(variable_declarator
  value: (call_expression function: (identifier) @_req arguments: (arguments . (string)))
  (#eq? @_req "require")) @import
(assignment_expression
  left: (member_expression object: (identifier) @_m property: (property_identifier) @_e)
  right: (identifier)
  (#eq? @_m "module") (#eq? @_e "exports")) @import

(variable_declarator
  name: (identifier) @local.name
  value: (new_expression constructor: [(identifier) (member_expression)] @local.type)) @local
(assignment_expression
  left: (member_expression object: (this) property: (property_identifier)) @local.name
  right: (new_expression constructor: [(identifier) (member_expression)] @local.type)) @local
(variable_declarator name: (identifier) @local.name value: [(array) (string) (template_string)] @local.literal) @local
