; Java (capture protocol: see python.scm).

(package_declaration [(identifier) (scoped_identifier)] @package)

(class_declaration name: (identifier) @name) @def.class
(record_declaration name: (identifier) @name) @def.class
(interface_declaration name: (identifier) @name) @def.interface
(enum_declaration name: (identifier) @name) @def.enum
(annotation_type_declaration name: (identifier) @name) @def.interface
(method_declaration name: (identifier) @name) @def.method
(constructor_declaration name: (identifier) @name) @def.method

(method_invocation !object name: (identifier) @name) @ref.call
(method_invocation object: (_) @receiver name: (identifier) @name) @ref.method_call
(object_creation_expression
  type: [
    (type_identifier) @name
    (generic_type (type_identifier) @name)
    (scoped_type_identifier (type_identifier) @name .)
  ]) @ref.constructor

(import_declaration) @import

(local_variable_declaration type: (_) @local.type declarator: (variable_declarator name: (identifier) @local.name)) @local
(local_variable_declaration
  declarator: (variable_declarator name: (identifier) @local.name value: (object_creation_expression type: (_) @local.type))) @local
(formal_parameter type: (_) @local.type name: (identifier) @local.name) @local
(field_declaration type: (_) @local.type declarator: (variable_declarator name: (identifier) @local.name)) @field
