; Rust (capture protocol: see python.scm).

(function_item name: (identifier) @name) @def.function
(function_signature_item name: (identifier) @name) @def.method
(struct_item name: (type_identifier) @name) @def.struct
(enum_item name: (type_identifier) @name) @def.enum
(union_item name: (type_identifier) @name) @def.struct
(trait_item name: (type_identifier) @name) @def.trait
(type_item name: (type_identifier) @name) @def.type
(impl_item
  type: [
    (type_identifier) @name
    (generic_type type: (type_identifier) @name)
    (scoped_type_identifier name: (type_identifier) @name)
    (generic_type type: (scoped_type_identifier name: (type_identifier) @name))
  ]) @scope.impl
(mod_item name: (identifier) @name body: (declaration_list)) @scope.module

(call_expression function: (identifier) @name) @ref.call
(call_expression function: (scoped_identifier path: (_) @receiver name: (identifier) @name)) @ref.method_call
(call_expression function: (field_expression value: (_) @receiver field: (field_identifier) @name)) @ref.method_call
(call_expression function: (generic_function function: (identifier) @name)) @ref.call
(call_expression
  function: (generic_function function: (scoped_identifier path: (_) @receiver name: (identifier) @name))) @ref.method_call
(struct_expression name: (type_identifier) @name) @ref.constructor
; Calls inside macro arguments (`println!("{}", area())`, `assert_eq!(s.area(), 2)`): a macro's tokens are
; not parsed as expressions, so a call is an identifier right before a parenthesised token tree; the
; extractor reads its receiver (`s.`, `Foo::`) from the tokens before it.
(token_tree (identifier) @name . (token_tree) @macro.args) @ref.call

(use_declaration) @import

(let_declaration pattern: (identifier) @local.name type: (_) @local.type) @local
(let_declaration
  pattern: (identifier) @local.name
  value: (call_expression function: (scoped_identifier path: (_) @local.type))) @local
(let_declaration pattern: (identifier) @local.name value: (struct_expression name: (_) @local.type)) @local
(parameter pattern: (identifier) @local.name type: (_) @local.type) @local
