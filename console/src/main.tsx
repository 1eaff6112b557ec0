// The console's entry: mounts the app into index.html's <div id="app">.

import { render } from 'preact';
import { App } from './app';
import './style.css';

const root = document.getElementById('app');
if (root) render(<App />, root);
