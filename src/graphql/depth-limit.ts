import { GraphQLError, Kind, type ASTVisitor, type SelectionSetNode, type ValidationContext, type ValidationRule } from 'graphql';

/**
 * Limits how deeply an answer nests, introspection included. Fragments count as the fields they
 * stand for. An introspection `ofType` does not count: a type's wrappers (`[String!]!`) are a short
 * chain that can not fan out, and GraphiQL's own introspection query walks nine of them, so
 * counting them would refuse the IDE its schema. `fields { type { fields ... } }`, which does fan
 * out, is still limited like any other query.
 */
export function depthLimit(max: number): ValidationRule {
  return (context: ValidationContext): ASTVisitor => {
    // Each fragment is measured once, so nested spreads can not make this rule itself expensive.
    const fragmentDepths = new Map<string, number>();

    const depthOf = (set: SelectionSetNode, introspection: boolean): number => {
      let deepest = 0;
      for (const selection of set.selections) {
        if (selection.kind === Kind.FIELD) {
          const name = selection.name.value;
          const inIntrospection = introspection || name === '__schema' || name === '__type';
          const own = inIntrospection && name === 'ofType' ? 0 : 1;
          deepest = Math.max(deepest, own + (selection.selectionSet ? depthOf(selection.selectionSet, inIntrospection) : 0));
        } else if (selection.kind === Kind.INLINE_FRAGMENT) {
          deepest = Math.max(deepest, depthOf(selection.selectionSet, introspection));
        } else {
          const key = `${selection.name.value}:${introspection}`;
          const fragment = context.getFragment(selection.name.value);
          // Unknown and cyclic fragments are other rules' errors; -1 marks one being measured.
          if (!fragment || fragmentDepths.get(key) === -1) continue;
          if (!fragmentDepths.has(key)) {
            fragmentDepths.set(key, -1);
            fragmentDepths.set(key, depthOf(fragment.selectionSet, introspection));
          }
          deepest = Math.max(deepest, fragmentDepths.get(key)!);
        }
      }
      return deepest;
    };

    return {
      OperationDefinition(operation) {
        const depth = depthOf(operation.selectionSet, false);
        if (depth > max) {
          context.reportError(new GraphQLError(`Query depth limit of ${max} exceeded, found ${depth}.`, { nodes: [operation] }));
        }
      },
    };
  };
}
