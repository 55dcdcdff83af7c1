import { Center, Loader } from '@mantine/core';

export function PageLoader() {
  return (
    <Center p="xl">
      <Loader aria-label="Loading" />
    </Center>
  );
}
