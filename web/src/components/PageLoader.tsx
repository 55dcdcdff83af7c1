import { Center, Loader } from '@mantine/core';

/** A spinner announced as "Loading" (a status region: a bare element may not carry an aria-label). */
export function PageLoader() {
  return (
    <Center p="xl" role="status" aria-label="Loading">
      <Loader />
    </Center>
  );
}
