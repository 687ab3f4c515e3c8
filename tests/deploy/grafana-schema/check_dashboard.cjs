// Type-checks a Grafana dashboard JSON file against Grafana's own dashboard
// schema: the Dashboard type @grafana/schema generates from it. The JSON is
// compiled as the initialiser of a `Dashboard`-typed constant, so TypeScript
// checks every field's type, every enumerated value and every unknown key
// (excess property checks), with no file written.
// Usage: node check_dashboard.cjs DASHBOARD.json   (exit 0 valid, 1 not)
'use strict';
const fs = require('fs');
const path = require('path');
const ts = require('typescript');

const dashboardPath = process.argv[2];
if (!dashboardPath) {
	console.error('usage: node check_dashboard.cjs DASHBOARD.json');
	process.exit(2);
}
const json = fs.readFileSync(dashboardPath, 'utf8');
JSON.parse(json); // plain JSON first: a syntax error is said as such
const schemaTypes = '@grafana/schema/dist/esm/raw/dashboard/x/Dashboard_types.gen';
const virtualFile = path.join(__dirname, '__dashboard_check__.ts');
const source =
	`import type { Dashboard, Panel, RowPanel } from '${schemaTypes}';\n` +
	`export const dashboard: Dashboard & { panels: Array<Panel | RowPanel> } = ${json};\n`;
const options = {
	strict: true,
	noEmit: true,
	target: ts.ScriptTarget.ES2020,
	module: ts.ModuleKind.ESNext,
	moduleResolution: ts.ModuleResolutionKind.Bundler,
	skipLibCheck: true,
	types: [],
};
const host = ts.createCompilerHost(options);
const readFile = host.readFile.bind(host);
const fileExists = host.fileExists.bind(host);
host.readFile = (name) => (name === virtualFile ? source : readFile(name));
host.fileExists = (name) => name === virtualFile || fileExists(name);
const program = ts.createProgram([virtualFile], options, host);
const diagnostics = ts.getPreEmitDiagnostics(program);
for (const diagnostic of diagnostics) {
	const text = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
	if (diagnostic.file && diagnostic.start !== undefined) {
		const { line } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
		console.log(`${dashboardPath}:${line}: ${text}`);
	} else {
		console.log(text);
	}
}
if (diagnostics.length === 0) {
	const dashboard = JSON.parse(json);
	console.log(`${dashboardPath}: a valid Grafana dashboard (schemaVersion ${dashboard.schemaVersion}, ` +
		`${dashboard.panels.length} panels) by @grafana/schema ` +
		require('@grafana/schema/package.json').version);
}
process.exit(diagnostics.length ? 1 : 0);
