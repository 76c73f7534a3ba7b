#!/usr/bin/env python3
"""The module import graph of one crate's src/, and its cycles.

    scripts/module-graph.py crates/run/src     # prints `module -> imports`, then the cycles

Reads `crate::module` and `super::module` paths (comments stripped) and
prints every module's imports within the crate, then the strongly connected
components with more than one module. Exits 1 if there is any: a module
imports one that imports it back (docs/ARCHITECTURE.md, "Layers point one
way"). Between crates, Cargo refuses cycles itself.
"""
import re,os,sys
root=sys.argv[1]
mods={}
for dp,dn,fn in os.walk(root):
    for f in fn:
        if f.endswith('.rs'):
            p=os.path.join(dp,f); rel=os.path.relpath(p,root)[:-3]
            if rel.endswith('/mod'): rel=rel[:-4]
            mods[rel.replace('/','::')]=open(p).read()
names=set(mods)
edges={}
for m,src in mods.items():
    # strip comments
    s=re.sub(r'//.*','',src)
    deps=set()
    # expand use crate::{a, b::{..}} groups roughly: find all crate:: paths and group contents
    for mm in re.finditer(r'crate::([a-z_]+)(?:::([a-z_]+))?',s):
        a,b=mm.group(1),mm.group(2)
        if b and f'{a}::{b}' in names: deps.add(f'{a}::{b}')
        elif a in names: deps.add(a)
    for mm in re.finditer(r'use crate::\{([^;]*)\};',s,re.S):
        body=mm.group(1)
        # top-level names in braces
        depth=0;tok=''
        items=[]
        for ch in body:
            if ch=='{': depth+=1
            if ch=='}': depth-=1
            if ch==',' and depth==0: items.append(tok);tok=''
            else: tok+=ch
        items.append(tok)
        for it in items:
            it=it.strip()
            seg=it.split('::')
            if len(seg)>1 and f'{seg[0]}::{seg[1].strip("{} ")}' in names: deps.add(f'{seg[0]}::{seg[1].strip("{} ")}')
            elif seg[0] in names: deps.add(seg[0])
    # super:: within submodules
    if '::' in m:
        parent=m.rsplit('::',1)[0]
        for mm in re.finditer(r'super::([a-z_]+)',s):
            c=f'{parent}::{mm.group(1)}'
            if c in names: deps.add(c)
            elif mm.group(1) and parent in names: deps.add(parent)
    deps.discard(m)
    edges[m]=sorted(deps)
for m in sorted(edges): print(m,'->',' '.join(edges[m]))
# SCCs
idx={};low={};st=[];on=set();out=[];c=[0]
sys.setrecursionlimit(10000)
def sc(v):
    idx[v]=low[v]=c[0];c[0]+=1;st.append(v);on.add(v)
    for w in edges.get(v,[]):
        if w not in edges: continue
        if w not in idx: sc(w);low[v]=min(low[v],low[w])
        elif w in on: low[v]=min(low[v],idx[w])
    if low[v]==idx[v]:
        comp=[]
        while True:
            w=st.pop();on.discard(w);comp.append(w)
            if w==v:break
        out.append(comp)
for v in edges:
    if v not in idx: sc(v)
cyc=[x for x in out if len(x)>1]
print("CYCLES:", len(cyc))
for x in cyc: print('  ',sorted(x))
sys.exit(1 if cyc else 0)
