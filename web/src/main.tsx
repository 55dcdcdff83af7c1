// First: the style nonce, before any library that adds <style> elements loads.
import './lib/nonce';
import '@mantine/core/styles.css';
import { createRoot } from 'react-dom/client';
import { App } from './app';

createRoot(document.getElementById('root')!).render(<App />);
