/**
 * Request validators that Ajv compiles on a route's first request, not when the server starts.
 *
 * Fastify compiles every route's body, querystring and params schemas in `ready()`: errand's 40,
 * and again for the HEAD route of each GET, took ~140 ms, and the garbage Ajv made doing it
 * (~15 MB) grew V8's heap for good, so a server that had served nothing held ~92 MB. Most
 * processes use a few routes (a remote worker's lease and report, an enqueuer's POST), so each
 * validator is compiled when its route is first asked, by Fastify's own compiler
 * (`@fastify/ajv-compiler`, with the server's Ajv options and shared schemas), and kept. Every
 * route's schemas are compiled in test/unit/lazy-validators.test.ts, so a schema Ajv refuses fails
 * there rather than on a request.
 * @internal
 * @module
 */
import { AjvCompiler } from "@fastify/ajv-compiler";

type ValidatorFactory = ReturnType<typeof AjvCompiler>;
type Compile = ReturnType<ValidatorFactory>;
type Validate = ReturnType<Compile>;

/** A validator whose Ajv function is made on its first call; Fastify reads its `errors`. */
interface LazyValidator {
  (data: unknown, context?: unknown): boolean | Promise<unknown>;
  errors?: Validate["errors"];
  /** Set so Fastify passes the request part's parent, as it does to Ajv's own functions. */
  schemaEnv: true;
}

/**
 * Fastify's `schemaController.compilersFactory.buildValidator`: Fastify's default validator
 * factory, with each route's compile (and the Ajv instance itself) put off to its first request.
 */
export function lazyValidators(): ValidatorFactory {
  const pooled = AjvCompiler();
  return ((externalSchemas, options) => {
    let compile: Compile | undefined;
    return (route) => {
      let validate: Validate | undefined;
      const lazy = ((data: unknown, context?: unknown) => {
        if (validate === undefined) {
          compile ??= pooled(externalSchemas, options);
          validate = compile(route);
        }
        const result = (validate as (data: unknown, context?: unknown) => boolean | Promise<unknown>)(
          data,
          context,
        );
        lazy.errors = validate.errors;
        return result;
      }) as LazyValidator;
      lazy.schemaEnv = true;
      return lazy as unknown as Validate;
    };
  }) as ValidatorFactory;
}
