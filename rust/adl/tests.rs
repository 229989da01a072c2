use super::*;

const NS: &str = "http://www.ibm.com/xmlns/prod/streams/application/v4200";

fn adl(body: &str) -> String {
    format!(
        "<applicationSet xmlns='{NS}'><splApplication name='x'><composites><compositeOperInstances>\
         <compositeOperInstance index='9' definitionIndex='0' name='M'>{body}</compositeOperInstance>\
         </compositeOperInstances></composites></splApplication></applicationSet>"
    )
}

fn op(index: &str, inner: &str) -> String {
    format!("<primitiveOperInstance index='{index}' name='A{index}' definitionIndex='0'>{inner}</primitiveOperInstance>")
}

fn with_app<T>(text: &str, check: impl FnOnce(&Application<'_>) -> T) -> T {
    let doc = document(text.as_bytes(), 1 << 20).expect("well-formed");
    check(&read(&doc).expect("accepted"))
}

fn refused(text: &str) -> String {
    match document(text.as_bytes(), 1 << 20).and_then(|doc| read(&doc).map(|_| ())) {
        Ok(()) => panic!("accepted: {text}"),
        Err(err) => err.message("doc"),
    }
}

#[test]
fn reads_operators_ports_and_placement() {
    let body = op(
        "1",
        "<inputPorts><port index='0' tupleTypeIndex='0' isControl='true'><connections>\
         <connection operIndex='2' portIndex='0' portKind='output'/></connections></port></inputPorts>\
         <resources><poolLocation poolIndex='3'/><coLocation colocId='c'/></resources>\
         <sharedObject class='K'><wrapper> valgrind </wrapper><uri>bin/k.so</uri></sharedObject>",
    );
    with_app(&adl(&body), |app| {
        let a = &app.operators[0];
        assert_eq!((a.index, a.name, a.composite), (1, "A1", 9));
        assert!(a.input_ports[0].is_control);
        assert_eq!(a.input_ports[0].connections[0].kind, "output");
        let placement = a.placement.as_ref().expect("resources");
        assert_eq!(
            (placement.pool_index, placement.colocations.as_slice()),
            (Some(3), ["c"].as_slice())
        );
        assert!(a.partitions.is_none());
        assert_eq!(
            (a.wrapper.as_ref(), a.shared_object_uri.as_ref()),
            ("valgrind", "bin/k.so")
        );
    });
}

#[test]
fn integers_are_unsigned_longs_read_as_python_reads_them() {
    with_app(&adl(&op(" +7 ", "")), |app| {
        assert_eq!(app.operators[0].index, 7)
    });
    with_app(&adl(&op("1_2", "")), |app| {
        assert_eq!(app.operators[0].index, 12)
    });
    assert!(refused(&adl(&op("-1", "")))
        .ends_with("<primitiveOperInstance index='-1'> is negative (an xs:unsignedLong)"));
    assert!(refused(&adl(&op("1__2", ""))).ends_with("is not an integer"));
    assert!(refused(&adl(&op("18446744073709551616", "")))
        .ends_with("is out of range (an xs:unsignedLong)"));
}

#[test]
fn problems_name_the_line_of_the_element() {
    let text = adl(&format!(
        "\n\n{}",
        op("1", "<inputPorts><port index='0'/></inputPorts>")
    ));
    assert_eq!(
        refused(&text),
        "line 3: <port> lacks required attribute 'tupleTypeIndex'"
    );
    let twice = adl(&format!("{}{}", op("1", ""), op("1", "")));
    assert_eq!(refused(&twice), "line 1: operator index 1 is used twice");
}

#[test]
fn unsafe_or_broken_documents_are_refused_as_a_whole() {
    let doctype = format!(
        "<?xml version='1.0'?><!DOCTYPE a [<!ENTITY e 'x'>]>{}",
        adl(&op("1", ""))
    );
    assert_eq!(
        refused(&doctype),
        "doc: a DOCTYPE declaration is not allowed (entity and DTD attacks)"
    );
    assert_eq!(
        document(b"<a/>   ", 4)
            .map(|_| ())
            .unwrap_err()
            .message("doc"),
        "doc: 7 bytes exceeds the 4-byte limit"
    );
    assert!(refused("<applicationSet").starts_with("doc: not well-formed XML: "));
    assert!(refused(&format!(
        "<?xml version='1.0' encoding='latin1'?>{}",
        adl(&op("1", ""))
    ))
    .ends_with("not well-formed XML: malformed XML declaration"));
    assert!(refused(&format!("<?x'1'?>{}", adl(&op("1", ""))))
        .ends_with("malformed processing instruction"));
    assert_eq!(
        refused("<applicationSet xmlns='urn:x'/>"),
        "doc: root <applicationSet> in namespace 'urn:x' is not a v4200/v4000 ADL applicationSet"
    );
    assert_eq!(
        refused(&adl("")),
        "doc: the application has no primitive operators"
    );
}

#[test]
fn composites_are_walked_depth_first_in_document_order() {
    let nested = format!(
        "{}<compositeOperInstance index='20' definitionIndex='1' name='N'>{}</compositeOperInstance>{}",
        op("1", ""),
        op("2", ""),
        op("3", "")
    );
    with_app(&adl(&nested), |app| {
        let order: Vec<u64> = app.operators.iter().map(|o| o.index).collect();
        assert_eq!(order, [1, 2, 3]);
        let parents: Vec<(u64, Option<u64>)> =
            app.composites.iter().map(|c| (c.index, c.parent)).collect();
        assert_eq!(parents, [(9, None), (20, Some(9))]);
        assert_eq!(app.operators[1].composite, 20);
    });
}

#[test]
fn text_joins_the_pieces_before_the_first_child() {
    let body = op(
        "1",
        "<sharedObject><uri> a<!-- c -->b&amp;<![CDATA[<c>]]> <x/>after</uri></sharedObject>",
    );
    with_app(&adl(&body), |app| {
        assert_eq!(app.operators[0].shared_object_uri, "ab&<c>")
    });
}

#[test]
fn only_children_in_the_parents_namespace_are_read() {
    let body = op(
        "1",
        "<f:resources xmlns:f='urn:f'><f:poolLocation poolIndex='1'/></f:resources>",
    );
    with_app(&adl(&body), |app| {
        assert!(app.operators[0].placement.is_none())
    });
}
