; Go (capture protocol: see python.scm).

(package_clause (package_identifier) @package)

(function_declaration name: (identifier) @name) @def.function
(method_declaration
  receiver: (parameter_list
    (parameter_declaration
      type: [
        (type_identifier) @owner
        (pointer_type (type_identifier) @owner)
        (generic_type type: (type_identifier) @owner)
        (pointer_type (generic_type type: (type_identifier) @owner))
      ]))
  name: (field_identifier) @name) @def.method
(type_spec name: (type_identifier) @name type: (_) @type_body) @def.type
(type_alias name: (type_identifier) @name) @def.type
(type_spec type: (interface_type (method_elem name: (field_identifier) @name) @def.method))

(call_expression function: (identifier) @name) @ref.call
(call_expression function: (selector_expression operand: (_) @receiver field: (field_identifier) @name)) @ref.method_call
(composite_literal type: (type_identifier) @name) @ref.constructor
(composite_literal
  type: (qualified_type package: (package_identifier) @receiver name: (type_identifier) @name)) @ref.constructor

(import_declaration) @import

(parameter_declaration
  name: (identifier) @local.name
  type: [(type_identifier) (pointer_type) (qualified_type) (generic_type)] @local.type) @local
(var_spec
  name: (identifier) @local.name
  type: [(type_identifier) (pointer_type) (qualified_type) (generic_type)] @local.type) @local
(short_var_declaration
  left: (expression_list . (identifier) @local.name)
  right: (expression_list .
    [
      (composite_literal type: (_) @local.type)
      (unary_expression operand: (composite_literal type: (_) @local.type))
    ])) @local
