// The console's entry: mounts the app into index.html's <div id="app">. Every section's styles
// are in the one stylesheet (its script is loaded when the section is first opened).

import { render } from 'preact';
import { App } from './app';
import 'uplot/dist/uPlot.min.css';
import './style.css';
import './sql/style.css';
import './insights/style.css';
import './dashboards/style.css';
import './persons/style.css';
import './flags/style.css';
import './experiments/style.css';
import './surveys/style.css';
import './endpoints/style.css';
import './settings/style.css';

const root = document.getElementById('app');
if (root) render(<App />, root);
