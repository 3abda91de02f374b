; TypeScript/TSX additions to ecmascript.scm.

(abstract_class_declaration name: (_) @name) @def.class
(interface_declaration name: (_) @name) @def.interface
(type_alias_declaration name: (_) @name) @def.type
(enum_declaration name: (_) @name) @def.enum
(method_signature name: (property_identifier) @name) @def.method
(abstract_method_signature name: (property_identifier) @name) @def.method
(function_signature name: (identifier) @name) @def.function

(required_parameter
  pattern: (identifier) @local.name
  type: (type_annotation [(type_identifier) (generic_type) (nested_type_identifier)] @local.type)) @local
(optional_parameter
  pattern: (identifier) @local.name
  type: (type_annotation [(type_identifier) (generic_type) (nested_type_identifier)] @local.type)) @local
(variable_declarator
  name: (identifier) @local.name
  type: (type_annotation [(type_identifier) (generic_type) (nested_type_identifier)] @local.type)) @local
(public_field_definition
  name: (property_identifier) @local.name
  type: (type_annotation [(type_identifier) (generic_type) (nested_type_identifier)] @local.type)) @field
(required_parameter
  (accessibility_modifier)
  pattern: (identifier) @local.name
  type: (type_annotation [(type_identifier) (generic_type) (nested_type_identifier)] @local.type)) @field
