import {
  buildSchema as buildSdl,
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isIntrospectionType,
  isObjectType,
  isSpecifiedDirective,
  isSpecifiedScalarType,
  type GraphQLArgument,
  type GraphQLSchema,
} from 'graphql';
import { buildSchema } from '../../src/graphql/schema.js';

/**
 * Every part of the served schema a client can see in the IDE or in generated code carries a
 * description: types, fields, arguments, input fields and enum values (directives too, if any are
 * added). Introspection types and the built-in scalars are graphql's own.
 */
function undocumented(schema: GraphQLSchema): string[] {
  const missing: string[] = [];
  const check = (path: string, description: string | null | undefined) => {
    if (!description?.trim()) missing.push(path);
  };
  const checkArgs = (path: string, args: readonly GraphQLArgument[]) => {
    for (const arg of args) check(`${path}(${arg.name}:)`, arg.description);
  };
  for (const type of Object.values(schema.getTypeMap())) {
    if (isIntrospectionType(type) || isSpecifiedScalarType(type)) continue;
    check(type.name, type.description);
    if (isObjectType(type) || isInterfaceType(type)) {
      for (const field of Object.values(type.getFields())) {
        check(`${type.name}.${field.name}`, field.description);
        checkArgs(`${type.name}.${field.name}`, field.args);
      }
    } else if (isInputObjectType(type)) {
      for (const field of Object.values(type.getFields())) check(`${type.name}.${field.name}`, field.description);
    } else if (isEnumType(type)) {
      for (const value of type.getValues()) check(`${type.name}.${value.name}`, value.description);
    }
  }
  for (const directive of schema.getDirectives()) {
    if (isSpecifiedDirective(directive)) continue;
    check(`@${directive.name}`, directive.description);
    checkArgs(`@${directive.name}`, directive.args);
  }
  return missing.sort();
}

test('every type, field, argument, input field and enum value of the served schema has a description', () => {
  expect(undocumented(buildSchema())).toEqual([]);
});

test('the check names each kind of undescribed element, and ignores blank descriptions as missing', () => {
  const schema = buildSdl(`
    "Documented."
    type Query {
      "Documented."
      ok(
        "Documented."
        a: Int
        b: Int
      ): Kind
      bare: String
    }
    type Plain { "Documented." x: Int }
    "Documented."
    enum Kind {
      "Documented."
      one
      two
    }
    "Documented."
    input Filter {
      "   "
      text: String
    }
  `);
  expect(undocumented(schema)).toEqual(['Filter.text', 'Kind.two', 'Plain', 'Query.bare', 'Query.ok(b:)']);
});
